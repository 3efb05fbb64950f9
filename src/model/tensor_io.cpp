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

void write_tensors(const std::string& path, const std::vector<std::pair<std::string, at::Tensor>>& named,
                   const std::map<std::string, std::string>& metadata) {
  std::vector<at::Tensor> keep;  // owns the float copies until written
  std::vector<TensorToWrite> tensors;
  keep.reserve(named.size());
  for (const auto& [name, t] : named) {
    keep.push_back(t.detach().to(at::kCPU).to(at::kFloat).contiguous());
    const at::Tensor& c = keep.back();
    TensorToWrite w;
    w.name = name;
    w.shape.assign(c.sizes().begin(), c.sizes().end());
    w.data = c.data_ptr<float>();
    w.nbytes = static_cast<size_t>(c.numel()) * sizeof(float);
    tensors.push_back(w);
  }
  write_safetensors(path, tensors, metadata);
}

}  // namespace sieve
