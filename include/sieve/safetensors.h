// sieve: reading and writing the safetensors format (8-byte little-endian header length,
// a JSON header, then raw little-endian tensor bytes).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace sieve {

/// Element types Hugging Face stores in safetensors files.
enum class DType { F64, F32, F16, BF16, I64, I32, I16, I8, U8, BOOL };

/// Size in bytes of one element.
size_t dtype_size(DType t);
/// The safetensors spelling ("F32", "BF16", ...).
const char* dtype_name(DType t);
/// Parses a safetensors dtype name; throws sieve::Error on an unknown one.
DType dtype_from_name(const std::string& name);

/// A read-only view of one tensor inside a mapped file; valid while the file object lives.
struct TensorView {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  const uint8_t* data = nullptr;
  size_t nbytes = 0;

  /// Number of elements (product of the shape; 1 for a scalar).
  int64_t numel() const;
  /// Converts F32/F16/BF16/F64 (and integer types) to float32 values.
  std::vector<float> to_float() const;
};

/// A memory-mapped safetensors file with a fully validated header. Immutable; thread-safe reads.
class SafetensorsFile {
 public:
  /// Maps and validates `path`; throws sieve::Error describing the first problem found.
  static std::shared_ptr<const SafetensorsFile> open(const std::string& path);
  ~SafetensorsFile();

  /// True when the file holds a tensor of that name.
  bool contains(const std::string& name) const;
  /// The tensor of that name; throws sieve::Error naming it when absent.
  const TensorView& get(const std::string& name) const;
  /// Names of all tensors, sorted.
  std::vector<std::string> names() const;
  /// The optional "__metadata__" string map.
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  const std::string& path() const { return path_; }

 private:
  SafetensorsFile() = default;
  struct Mapping;
  std::unique_ptr<Mapping> map_;
  std::string path_;
  std::map<std::string, TensorView> tensors_;
  std::map<std::string, std::string> metadata_;
};

/// A tensor to write: bytes are copied from `data` (nbytes must equal numel * dtype_size).
struct TensorToWrite {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  const void* data = nullptr;
  size_t nbytes = 0;
};

/// Writes tensors (sorted by name, 8-byte aligned header as Hugging Face does) atomically.
void write_safetensors(const std::string& path, const std::vector<TensorToWrite>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

/// Converts IEEE half / bfloat16 bit patterns to float and back (round to nearest even).
float half_to_float(uint16_t h);
uint16_t float_to_half(float f);
float bf16_to_float(uint16_t h);
uint16_t float_to_bf16(float f);

}  // namespace sieve
