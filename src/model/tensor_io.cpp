#include "model/tensor_io.h"

#include <string>
#include <vector>

#include "sieve/error.h"

namespace sieve {
namespace {

std::string shape_str(const std::vector<int64_t>& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

}  // namespace

void copy_tensor(const SafetensorsFile& file, const TensorView& t, at::Tensor& dst) {
  std::vector<int64_t> want(dst.sizes().begin(), dst.sizes().end());
  SIEVE_THROW_IF_NOT(t.shape == want, file.path() << ": tensor '" << t.name << "' has shape " << shape_str(t.shape)
                                                  << ", expected " << shape_str(want));
  SIEVE_THROW_IF_NOT(t.dtype == DType::F32 || t.dtype == DType::F16 || t.dtype == DType::BF16 || t.dtype == DType::F64,
                     file.path() << ": tensor '" << t.name << "' has dtype " << dtype_name(t.dtype)
                                 << ", expected a floating type (F32, F16, BF16, F64)");
  std::vector<float> values = t.to_float();
  at::NoGradGuard no_grad;
  dst.copy_(at::from_blob(values.data(), {static_cast<int64_t>(values.size())}, at::kFloat).view(dst.sizes()));
}

}  // namespace sieve
