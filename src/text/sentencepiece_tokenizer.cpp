// Loads the SentencePiece backend module (libsieve_spm.so, see spm_module.cpp) with
// RTLD_DEEPBIND so that its bundled protobuf never meets libtorch's.
#include <dlfcn.h>
#include <limits.h>
#include <unistd.h>

#include <cstdlib>
#include <mutex>
#include <string>

#include "core/file_util.h"
#include "sieve/error.h"
#include "sieve/tokenizer.h"

namespace sieve {
namespace {

// AddressSanitizer refuses RTLD_DEEPBIND; sanitizer builds load the module without it (fine in
// processes without libtorch, which is where SentencePiece is tested under sanitizers).
#if defined(__SANITIZE_ADDRESS__)
constexpr int kDeepBind = 0;
#else
constexpr int kDeepBind = RTLD_DEEPBIND;
#endif

using CreateFn = Tokenizer* (*)(const char*, size_t, char*, size_t);
using TrainFn = int (*)(const char*, char*, size_t);

struct SpmModule {
  CreateFn create = nullptr;
  TrainFn train = nullptr;
};


// Search order: $SIEVE_SPM_MODULE, next to the executable, ../lib/sieve (installed), the build tree.
const SpmModule& spm_module() {
  static SpmModule module;
  static std::once_flag once;
  static std::string failure;
  std::call_once(once, [] {
    std::vector<std::string> candidates;
    if (const char* env = std::getenv("SIEVE_SPM_MODULE")) candidates.emplace_back(env);
    std::string exe = executable_dir();
    candidates.push_back(exe + "/libsieve_spm.so");
    candidates.push_back(exe + "/../lib/sieve/libsieve_spm.so");
#ifdef SIEVE_SPM_MODULE_BUILD_PATH
    candidates.emplace_back(SIEVE_SPM_MODULE_BUILD_PATH);
#endif
    std::string tried;
    for (const auto& path : candidates) {
      if (!is_file(path)) {
        tried += " " + path;
        continue;
      }
      void* h = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | kDeepBind);
      if (h == nullptr) {
        failure = std::string("cannot load ") + path + ": " + ::dlerror();
        return;
      }
      module.create = reinterpret_cast<CreateFn>(::dlsym(h, "sieve_spm_create"));
      module.train = reinterpret_cast<TrainFn>(::dlsym(h, "sieve_spm_train"));
      if (module.create == nullptr || module.train == nullptr) failure = path + " is not sieve's SentencePiece module";
      return;  // the module stays loaded for the life of the process: tokenizers' code lives there
    }
    failure = "the SentencePiece module libsieve_spm.so was not found (looked at" + tried +
              "); set SIEVE_SPM_MODULE to its path";
  });
  SIEVE_THROW_IF_NOT(failure.empty(), failure);
  return module;
}

}  // namespace

std::unique_ptr<Tokenizer> make_sentencepiece_tokenizer(const std::string& model_path, size_t model_max_length) {
  const SpmModule& m = spm_module();
  char err[1024] = {0};
  Tokenizer* t = m.create(model_path.c_str(), model_max_length, err, sizeof err);
  SIEVE_THROW_IF_NOT(t != nullptr, err);
  return std::unique_ptr<Tokenizer>(t);
}

void train_sentencepiece(const std::string& flags) {
  const SpmModule& m = spm_module();
  char err[1024] = {0};
  SIEVE_THROW_IF_NOT(m.train(flags.c_str(), err, sizeof err) == 0, "SentencePiece training failed: " << err);
}

}  // namespace sieve
