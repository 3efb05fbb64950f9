// Internal to the model module: the process's thread split, set once when nobody chose one.
#pragma once

namespace sieve {

/// Applies set_compute_threads(0) (all cores, split between libtorch and BLAS) unless
/// set_compute_threads() was already called in this process; a caller's choice stays.
void ensure_compute_threads();

}  // namespace sieve
