// SIEVE_MULTIVERSION: compile a hot loop for AVX-512, AVX2 and the x86-64 baseline, the loader
// picking the one the CPU runs (GCC's target_clones, an ifunc). Empty under a sanitizer: the
// loader runs the picking function before the sanitizer's runtime is up, and the test binaries
// of scripts/tsan.sh crashed on start (and, since they crash at gtest discovery, were deleted).
#pragma once

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_THREAD__) && \
    !defined(__SANITIZE_ADDRESS__)
#define SIEVE_MULTIVERSION __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define SIEVE_MULTIVERSION
#endif
