// sieve: error handling in two tiers (see docs/architecture.md).
//  - Caller mistakes (bad input, bad files, bad flags) throw sieve::Error with a message that
//    says what was wrong and what to do.
//  - Broken internal invariants abort through SIEVE_ASSERT: they are bugs, not inputs.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace sieve {

/// The one exception type sieve throws for caller mistakes and unusable inputs.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

namespace detail {
[[noreturn]] void assert_fail(const char* cond, const char* file, int line, const std::string& msg);
}  // namespace detail

}  // namespace sieve

/// Throws sieve::Error when `cond` is false; the remaining arguments are streamed into the message.
#define SIEVE_THROW_IF_NOT(cond, ...)           \
  do {                                          \
    if (!(cond)) {                              \
      std::ostringstream sieve_msg_;            \
      sieve_msg_ << __VA_ARGS__;                \
      throw ::sieve::Error(sieve_msg_.str());   \
    }                                           \
  } while (0)

/// Throws sieve::Error unconditionally with a streamed message.
#define SIEVE_THROW(...)                        \
  do {                                          \
    std::ostringstream sieve_msg_;              \
    sieve_msg_ << __VA_ARGS__;                  \
    throw ::sieve::Error(sieve_msg_.str());     \
  } while (0)

/// Aborts with file and line when an internal invariant is broken (a bug in sieve).
#define SIEVE_ASSERT(cond)                                                        \
  do {                                                                            \
    if (!(cond)) ::sieve::detail::assert_fail(#cond, __FILE__, __LINE__, "");     \
  } while (0)

/// Like SIEVE_ASSERT with an explanatory streamed message.
#define SIEVE_ASSERT_MSG(cond, ...)                                               \
  do {                                                                            \
    if (!(cond)) {                                                                \
      std::ostringstream sieve_msg_;                                              \
      sieve_msg_ << __VA_ARGS__;                                                  \
      ::sieve::detail::assert_fail(#cond, __FILE__, __LINE__, sieve_msg_.str());  \
    }                                                                             \
  } while (0)
