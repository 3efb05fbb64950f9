// Loops compiled for several instruction sets from one source, the one this CPU runs picked by the
// library's probe (core/cpu.h), so that SIEVE_PORTABLE=1 reaches them too: a loop's source is a
// function `NAME_body` marked SIEVE_VARIANT_BODY, and SIEVE_VARIANTS(RET, NAME, (PARAMS), (ARGS))
// after it defines NAME, which runs that body compiled for AVX-512 F, for AVX2 or for the x86-64
// baseline (the set GCC's target_clones made before, through an ifunc that asked the CPU itself).
// SIEVE_VARIANTS_ARCH does the same for the x86-64-v4 and -v3 levels. Elsewhere: the body alone.
#pragma once

#include "core/cpu.h"

#define SIEVE_VARIANT_BODY static inline __attribute__((always_inline))

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
// The variant is picked once, when the library loads (a pointer, as an ifunc would be).
#define SIEVE_VARIANTS_PICK(ret, name, params, args, hi, hi_target, mid, mid_target)                        \
  __attribute__((target(hi_target))) static ret name##_##hi params { return name##_body args; }            \
  __attribute__((target(mid_target))) static ret name##_##mid params { return name##_body args; }          \
  static ret name##_base params { return name##_body args; }                                                \
  static ret(*const name##_picked) params = ::sieve::cpu_features().hi   ? &name##_##hi                     \
                                            : ::sieve::cpu_features().mid ? &name##_##mid                   \
                                                                          : &name##_base;                   \
  ret name params { return name##_picked args; }
#define SIEVE_VARIANTS(ret, name, params, args) \
  SIEVE_VARIANTS_PICK(ret, name, params, args, avx512f, "avx512f", avx2, "avx2")
#define SIEVE_VARIANTS_ARCH(ret, name, params, args) \
  SIEVE_VARIANTS_PICK(ret, name, params, args, x86_64_v4, "arch=x86-64-v4", x86_64_v3, "arch=x86-64-v3")
#else
#define SIEVE_VARIANTS(ret, name, params, args) \
  ret name params { return name##_body args; }
#define SIEVE_VARIANTS_ARCH(ret, name, params, args) SIEVE_VARIANTS(ret, name, params, args)
#endif
