// Copying safetensors tensors into libtorch tensors (model and verifier weights).
#pragma once

#include <ATen/ATen.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "sieve/safetensors.h"

namespace sieve {

/// Copies the floating tensor `t` of `file` into `dst`, converting to dst's dtype; throws
/// sieve::Error naming the file and tensor when the shape differs or the dtype is not floating.
void copy_tensor(const SafetensorsFile& file, const TensorView& t, at::Tensor& dst);

/// Writes named tensors (any float dtype, any device; stored as F32) to a safetensors file
/// atomically, with `metadata`.
void write_tensors(const std::string& path, const std::vector<std::pair<std::string, at::Tensor>>& named,
                   const std::map<std::string, std::string>& metadata = {});

}  // namespace sieve
