// The one oneDNN CPU engine that sieve's inference products (PackedLinear, NativeAttention) run
// on. Internal to sieve's model code.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

namespace sieve {

inline const dnnl::engine& dnnl_cpu_engine() {
  static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

}  // namespace sieve
