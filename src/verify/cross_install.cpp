// A cross-encoder installed beside its model: where --gate-mode accurate|cascade and auto find it.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>

#include "core/checksum.h"
#include "core/file_util.h"
#include "sieve/cross_encoder.h"
#include "sieve/error.h"
#include "sieve/model.h"
#include "sieve/verify.h"

namespace sieve {
std::string installed_cross_encoder(const std::string& model_dir) {
  std::string dir = model_dir.empty() ? default_model_dir() : find_installed_model(model_dir);
  if (dir.empty()) dir = model_dir;
  if (dir.empty()) return "";
  const std::string c = path_join(dir, "cross-encoder");
  return is_cross_encoder_dir(c) ? c : "";
}

CrossEncoderInstall install_cross_encoder(const std::string& source, const std::string& model) {
  std::string model_dir = model.empty() ? default_model_dir() : find_installed_model(model);
  if (model_dir.empty()) model_dir = model;
  SIEVE_THROW_IF_NOT(!model_dir.empty() && is_dir(model_dir), "model '" << model << "' is neither installed nor a folder");
  SIEVE_THROW_IF_NOT(is_cross_encoder_dir(source), "'" << source << "' is not a cross-encoder folder (its config.json names "
                                                          "no *ForSequenceClassification; sieve train cross-encoder makes one)");
  // Loaded as a search would load it: a threshold for other weights than the folder's is dropped.
  const auto ce = CrossEncoder::load(source);
  SIEVE_THROW_IF_NOT(!std::isnan(ce->threshold()), "'" << source << "' has no threshold for its weights: calibrate it first "
                                                          "(sieve verify calibrate --verifier cross:" << source
                                                       << " --pairs DEV --max-balanced-accuracy)");
  CrossEncoderInstall r;
  r.dir = path_join(model_dir, "cross-encoder");
  r.threshold = ce->threshold();
  r.replaced = is_dir(r.dir);
  const CrossEncoderMeta& m = ce->meta();
  r.band = cascade_band_for_gate(m, default_verifier(model_dir, ""));
  r.combined = r.band && m.cascade_combination.valid();
  namespace fs = std::filesystem;
  const std::string staging = path_join(model_dir, ".cross-encoder.staging");
  std::error_code ec;
  fs::remove_all(staging, ec);
  fs::create_directory(staging);
  for (const auto& e : fs::directory_iterator(source)) {
    const std::string name = e.path().filename().string();
    if (e.is_directory() && name.rfind("checkpoint-", 0) == 0) continue;  // training state, not the model
    fs::copy(e.path(), fs::path(staging) / name, fs::copy_options::recursive);
  }
  publish_dir(staging, r.dir);
  return r;
}

}  // namespace sieve
