// resolve_verifier: the one rule that turns a face's verifier spec into a verifier.
#include <cmath>
#include <limits>

#include "sieve/cross_encoder.h"
#include "sieve/error.h"
#include "sieve/index.h"
#include "sieve/model.h"
#include "sieve/verify.h"

namespace sieve {

std::string ResolvedVerifier::kind() const {
  if (cross) return "cross";
  return verifier ? std::string(verifier_kind_name(verifier->config().kind)) : std::string("cosine");
}

double ResolvedVerifier::threshold() const {
  if (cross) return cross->threshold();
  return verifier ? verifier->config().threshold : std::numeric_limits<double>::quiet_NaN();
}

ResolvedVerifier resolve_verifier(const std::string& spec, const VerifierContext& context) {
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
  std::string identity;
  try {
    (void)verifier_kind_from_name(r.name);
  } catch (const Error&) {
    r.file = true;
    identity = context.encoder_identity.empty() ? model_identity(resolve_model_dir(context.model_dir))
                                                : context.encoder_identity;
  }
  r.verifier = Verifier::load(r.name, identity);
  return r;
}

}  // namespace sieve
