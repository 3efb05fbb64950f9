// The CPU probe (core/cpu.h).
#include "core/cpu.h"

#include <cstdlib>
#include <cstring>

namespace sieve {

CpuFeatures probe_cpu(const char* env_portable) {
  CpuFeatures c;
  if (env_portable != nullptr && std::strcmp(env_portable, "") != 0 && std::strcmp(env_portable, "0") != 0) {
    c.portable = true;
    return c;
  }
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  c.avx2 = __builtin_cpu_supports("avx2");
  c.avx512f = __builtin_cpu_supports("avx512f");
  c.avx512bw_vl = c.avx512f && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
  c.avx512_bf16 = c.avx512bw_vl && __builtin_cpu_supports("avx512bf16");
  c.x86_64_v3 = __builtin_cpu_supports("x86-64-v3");
  c.x86_64_v4 = __builtin_cpu_supports("x86-64-v4");
#endif
  return c;
}

const CpuFeatures& cpu_features() {
  static const CpuFeatures c = probe_cpu(std::getenv("SIEVE_PORTABLE"));
  return c;
}

}  // namespace sieve
