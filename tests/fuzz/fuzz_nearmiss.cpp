// The near-miss generator's sentence layer on arbitrary bytes: tokenize must round-trip through
// detokenize, and every perturbation kind must either decline or return a different sentence.
// Needs WordNet (wordnet-base); without it only the tokenizer is exercised.
#include <cstdlib>
#include <random>

#include "fuzz_target.h"
#include "nearmiss/lexicon.h"
#include "nearmiss/perturb.h"
#include "nearmiss/sentence.h"

SIEVE_FUZZ_TARGET(nearmiss) {
  static const std::unique_ptr<sieve::nearmiss::Lexicon> lex =
      sieve::nearmiss::Lexicon::available() ? sieve::nearmiss::Lexicon::load() : nullptr;
  static const std::unique_ptr<sieve::nearmiss::Perturber> perturber =
      lex ? std::make_unique<sieve::nearmiss::Perturber>(*lex) : nullptr;
  const std::string text(reinterpret_cast<const char*>(data), size);
  sieve::fuzz::expect_only_sieve_errors([&] {
    const auto s = sieve::nearmiss::tokenize(text);
    if (sieve::nearmiss::detokenize(s) != text) std::abort();
  });
  if (!perturber || size > 400) return 0;
  for (int k = 0; k <= static_cast<int>(sieve::nearmiss::Kind::NegatedAntonym); ++k) {
    sieve::fuzz::expect_only_sieve_errors([&] {
      std::mt19937_64 rng(size * 31 + static_cast<size_t>(k));
      const auto out = perturber->apply(text, static_cast<sieve::nearmiss::Kind>(k), rng);
      if (out && *out == text) std::abort();
    });
  }
  return 0;
}
