#include "sieve/error.h"

#include <cstdio>
#include <cstdlib>

namespace sieve::detail {

void assert_fail(const char* cond, const char* file, int line, const std::string& msg) {
  std::fprintf(stderr, "sieve: internal error (a bug, please report): %s failed at %s:%d%s%s\n",
               cond, file, line, msg.empty() ? "" : ": ", msg.c_str());
  std::abort();
}

}  // namespace sieve::detail
