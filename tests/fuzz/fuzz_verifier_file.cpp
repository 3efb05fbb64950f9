// Verifier files (safetensors with the verifier's config in its metadata) on arbitrary bytes. A
// file that loads is scored once on a small pair of token-state matrices.
#include "fuzz_target.h"
#include "sieve/verify.h"

SIEVE_FUZZ_TARGET(verifier_file) {
  const std::string path = sieve::fuzz::input_file(data, size, "verifier.safetensors");
  sieve::fuzz::expect_only_sieve_errors([&] {
    auto v = sieve::Verifier::load(path);
    const size_t dim = v->config().encoder_dim;
    if (dim == 0 || dim > 4096) return;
    sieve::TokenStates q, c;
    q.length = 3;
    c.length = 4;
    q.values.assign(q.length * dim, 0.5f);
    c.values.assign(c.length * dim, -0.25f);
    for (size_t i = 0; i < c.values.size(); i += 3) c.values[i] = 1.0f;
    sieve::score_pairs(*v, {q, c});
  });
  return 0;
}
