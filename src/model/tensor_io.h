// Copying safetensors tensors into libtorch tensors (model and verifier weights).
#pragma once

#include <ATen/ATen.h>

#include "sieve/safetensors.h"

namespace sieve {

/// Copies the floating tensor `t` of `file` into `dst`, converting to dst's dtype; throws
/// sieve::Error naming the file and tensor when the shape differs or the dtype is not floating.
void copy_tensor(const SafetensorsFile& file, const TensorView& t, at::Tensor& dst);

}  // namespace sieve
