// Internal to the model module: the process's thread split, set once when nobody chose one, and
// the device names models load onto.
#pragma once

#include <c10/core/Device.h>

#include <string>

namespace sieve {

/// Applies set_compute_threads(0) (all cores, split between libtorch and BLAS) unless
/// set_compute_threads() was already called in this process; a caller's choice stays.
void ensure_compute_threads();

/// The device a name gives ("cpu", "cuda", "cuda:N"); sieve::Error for another name or when
/// CUDA is asked for but absent.
c10::Device parse_device(const std::string& name);

}  // namespace sieve
