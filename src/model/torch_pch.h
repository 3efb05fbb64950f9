// Precompiled header for the files that need libtorch: only the narrow headers they use.
#pragma once
#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
