// A linear layer (y = x W^T + b) for CPU inference through oneDNN's matmul, its weights reordered
// once into the layout oneDNN's kernels read: at::linear hands OpenBLAS the weights on every call
// and OpenBLAS packs them each time, which costs more than the product itself for a few rows
// (batch-1 queries). Internal to sieve's model code.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <memory>

#include "sieve/encoder.h"

namespace sieve {

/// An activation applied to a product's output, fused into it: oneDNN's post-op in fp32 and bf16,
/// the epilogue's own pass over each row (still in cache) in int8. Gelu: erf form; GeluTanh: the
/// tanh approximation ("gelu_new").
enum class Activation { None, Gelu, GeluTanh, Relu };

/// Where a product's output goes (the native pass chains its products through these, so that no
/// separate pass over the activations converts them or adds the residual): Float writes floats;
/// Bf16 writes bfloat16 rounded to nearest even, the next bf16 product's input (Bf16 and Int8
/// precision; int8 rounds its epilogue's floats); AddToFloat adds the product to the floats already in y (y += x W^T + b: a residual
/// connection; no activation).
enum class LinearOutput { Float, Bf16, AddToFloat };

/// Immutable once built and shared by threads; every forward() makes its own buffers (the
/// primitive for a row count is made on its first use, under a lock, and kept).
///
/// Bf16: weights rounded to bfloat16 once; each call rounds the input's rows to bfloat16 and
/// oneDNN accumulates in fp32 (AMX or AVX-512 BF16 where the CPU has them), adding the bias.
///
/// Int8: weights are quantized symmetrically per output channel (scale_n = max |W[n, :]| / L,
/// L = weight_levels()); each call quantizes the input's rows asymmetrically to uint8 (its own
/// scale and zero point per row, the row's range widened to include 0), oneDNN multiplies u8 x s8
/// into int32, and y[m, n] = (acc[m, n] - zero_m * sum_k Wq[n, k]) * scale_m * scale_n + b[n].
class PackedLinear {
 public:
  /// weight [N, K] and bias [N] (may be undefined), float32 on the CPU. `int8_levels`: the int8
  /// weight grid, 127 or 63 (0 = this CPU's: default_weight_levels()); 127 is refused on a CPU
  /// without VNNI, where it would saturate.
  PackedLinear(const at::Tensor& weight, const at::Tensor& bias, Precision precision, int int8_levels = 0,
               Activation activation = Activation::None, LinearOutput output = LinearOutput::Float);
  ~PackedLinear();
  PackedLinear(const PackedLinear&) = delete;
  PackedLinear& operator=(const PackedLinear&) = delete;

  /// x [..., K] float32 on the CPU -> [..., N].
  at::Tensor forward(const at::Tensor& x) const;
  /// x [M, K] row-major -> y [M, N] (the native engine's call: no tensor is made); y as output()
  /// says (Float or AddToFloat: floats; Bf16: bfloat16 bits).
  void forward(const float* x, int64_t m, void* y) const;
  /// The same from rows already in bfloat16 (Bf16 precision only): nothing is converted.
  void forward_bf16(const uint16_t* x, int64_t m, void* y) const;

  int64_t in_features() const { return k_; }
  int64_t out_features() const { return n_; }
  Precision precision() const { return precision_; }
  Activation activation() const { return activation_; }
  LinearOutput output() const { return output_; }
  /// Int8: the largest weight magnitude after quantization: 127, or 63 where the CPU lacks VNNI
  /// (its u8 x s8 pair sums pass through int16 and would saturate at full range).
  int weight_levels() const { return levels_; }

  /// Whether this machine's oneDNN has a VNNI int8 instruction set (AVX-512 VNNI or AVX-VNNI).
  static bool cpu_has_vnni();
  /// Whether this machine's oneDNN has native bfloat16 products (AVX-512 BF16, or AMX).
  static bool cpu_has_bf16();
  /// The int8 weight grid this CPU gets by default: 127 with VNNI, else 63.
  static int default_weight_levels() { return cpu_has_vnni() ? 127 : 63; }

 private:
  struct Impl;
  void run(const void* src, int64_t m, void* dst) const;
  std::unique_ptr<Impl> impl_;
  int64_t k_ = 0, n_ = 0;
  Precision precision_;
  Activation activation_ = Activation::None;
  LinearOutput output_ = LinearOutput::Float;
  int levels_ = 127;
};

}  // namespace sieve
