// Where the embedded default model, sieve-mini, lives (models/sieve-mini in the source tree).
#include <cstdlib>

#include "core/file_util.h"
#include "sieve/error.h"
#include "sieve/model.h"

namespace sieve {
namespace {

// Candidates in order: $SIEVE_MODEL_DIR, ../models/sieve-mini next to the executable (build/sieve
// in a checkout), ../share/sieve/models/sieve-mini (installed), the source tree it was built from.
std::vector<std::string> candidates() {
  std::vector<std::string> c;
  if (const char* env = std::getenv("SIEVE_MODEL_DIR"); env != nullptr && *env != '\0') c.emplace_back(env);
  const std::string exe = executable_dir();
  c.push_back(exe + "/../models/sieve-mini");
  c.push_back(exe + "/../share/sieve/models/sieve-mini");
#ifdef SIEVE_SOURCE_MODELS_DIR
  c.push_back(std::string(SIEVE_SOURCE_MODELS_DIR) + "/sieve-mini");
#endif
  return c;
}

}  // namespace

std::string default_model_dir() {
  for (const auto& dir : candidates())
    if (is_file(path_join(dir, "config.json"))) return dir;
  return "";
}

std::string resolve_model_dir(const std::string& given) {
  if (!given.empty()) return given;
  const std::string dir = default_model_dir();
  if (!dir.empty()) return dir;
  std::string tried;
  for (const auto& c : candidates()) tried += " " + c;
  throw Error("no --model given, and the default model sieve-mini was not found (looked in:" + tried +
              "; SIEVE_MODEL_DIR names another folder)");
}

std::string default_verifier_file() {
  const std::string dir = default_model_dir();
  if (dir.empty()) return "";
  const std::string f = path_join(dir, "verifier.safetensors");
  return is_file(f) ? f : "";
}

std::string default_verifier(const std::string& model_dir, const std::string& fallback) {
  if (model_dir.empty()) {
    const std::string f = default_verifier_file();
    return f.empty() ? fallback : f;
  }
  const std::string f = path_join(model_dir, "verifier.safetensors");
  return is_file(f) ? f : fallback;
}

}  // namespace sieve
