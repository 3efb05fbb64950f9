// Gate modes and stage 2's choice of verifiers: the names, the spec of each mode, the rule that
// turns a face's options into the verifiers it runs (stage2_choice), and when a band holds.
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
GateMode gate_mode_from_name(const std::string& name) {
  if (name == "auto") return GateMode::Auto;
  if (name == "fast") return GateMode::Fast;
  if (name == "accurate") return GateMode::Accurate;
  if (name == "cascade") return GateMode::Cascade;
  SIEVE_THROW("unknown gate mode '" << name << "' (auto, fast, accurate or cascade)");
}

const char* gate_mode_name(GateMode mode) {
  switch (mode) {
    case GateMode::Auto: return "auto";
    case GateMode::Fast: return "fast";
    case GateMode::Accurate: return "accurate";
    case GateMode::Cascade: return "cascade";
  }
  return "auto";
}

bool cascade_band_for_gate(const CrossEncoderMeta& meta, const std::string& gate) {
  return meta.has_cascade() && !std::isnan(meta.threshold) && !gate.empty() && is_file(gate) &&
         meta.cascade_fast_sha256 == sha256_file_hex(gate);
}

void check_stage2_choice(const std::string& verifier, const std::string& gate_mode, const std::string& cross) {
  SIEVE_THROW_IF_NOT(gate_mode.empty() || verifier.empty(), "give a verifier or a gate mode, not both");
  if (!gate_mode.empty()) (void)gate_mode_from_name(gate_mode);
  SIEVE_THROW_IF_NOT(cross.empty() || gate_mode == "accurate" || gate_mode == "cascade",
                     "--cross goes with gate mode accurate or cascade (it names their cross-encoder folder)");
}

Stage2Choice stage2_choice(const std::string& verifier, const std::string& gate_mode, const std::string& cross,
                           const std::string& model_dir) {
  check_stage2_choice(verifier, gate_mode, cross);
  Stage2Choice c;
  // A gate mode names the gate only; reranking alone stays with F1, as without a named verifier.
  c.rerank = stage2_verifier_spec(verifier, false);
  c.gate = !verifier.empty() ? verifier
                             : gate_verifier_spec(gate_mode.empty() ? GateMode::Auto : gate_mode_from_name(gate_mode),
                                                  cross, model_dir);
  return c;
}

std::string gate_verifier_spec(GateMode mode, const std::string& cross_dir, const std::string& model_dir) {
  if (mode == GateMode::Auto) {
    // The cascade when a cross-encoder is installed with a band for the model's gate as it is now.
    const std::string dir = cross_dir.empty() ? installed_cross_encoder(model_dir) : cross_dir;
    if (!dir.empty() && cascade_band_for_gate(read_cross_encoder_meta(dir), default_verifier(model_dir, "")))
      return kCascadeVerifierPrefix + dir;
    return "default";
  }
  if (mode == GateMode::Fast) {
    const std::string f = default_verifier(model_dir, "");
    SIEVE_THROW_IF_NOT(!f.empty(), "gate mode 'fast' needs the model's gate, and the model '"
                                       << model_dir << "' ships no verifier.safetensors");
    return f;
  }
  const std::string dir = cross_dir.empty() ? installed_cross_encoder(model_dir) : cross_dir;
  SIEVE_THROW_IF_NOT(!dir.empty(), "gate mode '" << gate_mode_name(mode)
                                                 << "' needs a cross-encoder: give its folder (--cross DIR), or "
                                                    "install one as MODEL_DIR/cross-encoder (sieve train cross-encoder)");
  return std::string(mode == GateMode::Accurate ? kCrossVerifierPrefix : kCascadeVerifierPrefix) + dir;
}

}  // namespace sieve
