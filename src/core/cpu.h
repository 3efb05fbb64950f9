// The CPU probe: the one place the library asks what this CPU runs (sieve's hand-written AVX-512
// loops and its compiler-vectorized variants, core/multiversion.h), and the switch that forces the
// portable paths everywhere: SIEVE_PORTABLE=1 in the environment (read once, at the first probe)
// makes the probe answer as for a CPU without AVX-512 or AVX2, so every loop runs its portable
// twin (what a CPU without them runs) and the tests reach those twins on any machine. oneDNN's
// products keep their own probe of the ISA they run (dnnl::get_effective_cpu_isa; limited by
// ONEDNN_MAX_CPU_ISA), which decides the int8 weight grid and bf16 products: see
// model/packed_linear.h.
#pragma once

namespace sieve {

struct CpuFeatures {
  bool avx2 = false;         ///< AVX2
  bool avx512f = false;      ///< AVX-512 F
  bool avx512bw_vl = false;  ///< AVX-512 F, BW and VL (the hand-written int8 loops)
  bool avx512_bf16 = false;  ///< and AVX-512 BF16 (the hand-written softmax row)
  bool x86_64_v3 = false;    ///< the x86-64-v3 level (AVX2, FMA, BMI2, ...)
  bool x86_64_v4 = false;    ///< the x86-64-v4 level (AVX-512 F, BW, CD, DQ, VL)
  bool portable = false;     ///< SIEVE_PORTABLE=1: every field above false
};

/// This CPU's features as the library uses them (probed once; SIEVE_PORTABLE applied).
const CpuFeatures& cpu_features();

/// The probe of `env_portable` (SIEVE_PORTABLE's value, or null) on this CPU: what cpu_features()
/// returns when the environment holds it (for tests of the switch itself).
CpuFeatures probe_cpu(const char* env_portable);

}  // namespace sieve
