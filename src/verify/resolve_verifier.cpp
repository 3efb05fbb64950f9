// resolve_verifier: the one rule that turns a face's verifier spec into a verifier.
#include <cmath>
#include <limits>

#include "core/checksum.h"
#include "sieve/cross_encoder.h"
#include "sieve/error.h"
#include "sieve/index.h"
#include "sieve/model.h"
#include "sieve/verify.h"

namespace sieve {

std::string ResolvedVerifier::kind() const {
  if (cascade()) return "cascade";
  if (cross) return "cross";
  return verifier ? std::string(verifier_kind_name(verifier->config().kind)) : std::string("cosine");
}

double ResolvedVerifier::threshold() const {
  if (cascade()) return verifier->config().threshold;
  if (cross) return cross->threshold();
  return verifier ? verifier->config().threshold : std::numeric_limits<double>::quiet_NaN();
}

std::string stage2_verifier_spec(const std::string& named, bool gate) {
  if (!named.empty()) return named;
  return gate ? "default" : "F1";
}

namespace {

// "cascade:DIR": the model's shipped gate and the cross-encoder in DIR, with the band DIR records
// for that gate (none yet: `calibrated` stays false, and only calibration may use it).
ResolvedVerifier resolve_cascade(const std::string& spec, const VerifierContext& context) {
  const std::string dir = spec.substr(std::string(kCascadeVerifierPrefix).size());
  SIEVE_THROW_IF_NOT(!dir.empty(), "'" << spec << "': name the cross-encoder's folder, as cascade:DIR");
  const std::string fast = default_verifier(context.model_dir, "");
  SIEVE_THROW_IF_NOT(!fast.empty(), "'" << spec << "': the cascade's fast tier is the model's shipped gate, and the model '"
                                        << context.model_dir << "' has no verifier.safetensors");
  ResolvedVerifier r;
  r.name = spec;
  r.file = true;
  r.cross = CrossEncoder::load(dir);
  r.verifier = Verifier::load(fast, "");
  check_verifier_encoder(*r.verifier, fast, context);
  SIEVE_THROW_IF_NOT(!std::isnan(r.verifier->config().threshold),
                     "'" << spec << "': the fast tier '" << fast << "' has no threshold (sieve verify calibrate)");
  const CrossEncoderMeta& m = r.cross->meta();
  if (cascade_band_for_gate(m, fast)) {
    r.band = {m.cascade_low, m.cascade_high};
    r.combination = m.cascade_combination;
    r.calibrated = true;
  }
  return r;
}

}  // namespace

ResolvedVerifier resolve_verifier(const std::string& spec, const VerifierContext& context) {
  // "default" is the model's shipped gate, always (a cross-encoder installed beside it is a tier
  // named by its own spec: gate_verifier_spec's Auto picks it).
  if (spec.rfind(kCascadeVerifierPrefix, 0) == 0) return resolve_cascade(spec, context);
  ResolvedVerifier r;
  r.name = spec.empty() || spec == "default" ? default_verifier(context.model_dir, "F1") : spec;
  if (r.name == "cosine") return r;
  if (r.name.rfind(kCrossVerifierPrefix, 0) == 0) {
    const std::string dir = r.name.substr(std::string(kCrossVerifierPrefix).size());
    SIEVE_THROW_IF_NOT(!dir.empty(), "'" << r.name << "': name the cross-encoder's folder, as cross:DIR");
    r.file = true;
    r.cross = CrossEncoder::load(dir);
    return r;
  }
  // Built-in names need no identity; a file is checked against the encoder that will feed it.
  try {
    (void)verifier_kind_from_name(r.name);
  } catch (const Error&) {
    r.file = true;
  }
  r.verifier = Verifier::load(r.name, "");
  if (r.file) check_verifier_encoder(*r.verifier, r.name, context);
  return r;
}

std::string shard_verifier_spec(const std::string& spec, const VerifierContext& context) {
  if (spec == "cosine" || spec.rfind(kCrossVerifierPrefix, 0) == 0) return "";
  if (spec.empty() || spec == "default" || spec.rfind(kCascadeVerifierPrefix, 0) == 0)
    return default_verifier(context.model_dir, "F1");
  return spec;
}

std::string shard_verifier_key(const ResolvedVerifier& verifier, const VerifierContext& context) {
  if (!verifier.verifier) return "";
  if (!verifier.file) return verifier_kind_name(verifier.verifier->config().kind);
  const std::string file = verifier.cascade() ? default_verifier(context.model_dir, "") : verifier.name;
  return "sha256:" + sha256_file_hex(file);
}

void check_verifier_encoder(const Verifier& verifier, const std::string& name, const VerifierContext& context) {
  const std::string& recorded = verifier.config().encoder_identity;
  if (recorded.empty()) return;
  // The context's identity when it is of the recorded scheme; else the encoder's, computed so.
  auto scheme = [](const std::string& id) { return id.substr(0, id.find(':')); };
  std::string have = context.encoder_identity;
  if (have.empty() || scheme(have) != scheme(recorded))
    have = model_identity_like(resolve_model_dir(context.model_dir), recorded);
  SIEVE_THROW_IF_NOT(have == recorded, (name.empty() ? std::string("the verifier") : "verifier '" + name + "'")
                                           << " was trained for encoder " << recorded << ", not for this one (" << have
                                           << ")");
}

std::unique_ptr<Verifier> load_verifier_for_model(const std::string& file_or_name, const std::string& model_dir) {
  auto v = Verifier::load(file_or_name, "");
  check_verifier_encoder(*v, file_or_name, {model_dir, ""});
  return v;
}

}  // namespace sieve
