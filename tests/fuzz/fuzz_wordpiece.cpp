// The WordPiece (BERT) tokenizer on arbitrary bytes: invalid UTF-8, control characters, CJK,
// accents, very long words. Encodings must keep ids in range and offsets inside the input.
#include <cstdlib>

#include "fuzz_target.h"
#include "sieve/model.h"
#include "sieve/tokenizer.h"

SIEVE_FUZZ_TARGET(wordpiece) {
  static const auto tok = sieve::make_wordpiece_tokenizer(sieve::builtin_fixture_vocab(3000));
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  sieve::fuzz::expect_only_sieve_errors([&] {
    sieve::EncodeOptions o;
    o.max_length = 64;
    const sieve::Encoding e = tok->encode(text, o);
    for (size_t i = 0; i < e.ids.size(); ++i) {
      if (e.ids[i] < 0 || static_cast<size_t>(e.ids[i]) >= tok->vocab_size()) std::abort();
      if (e.offsets[i].second > size || e.offsets[i].first > e.offsets[i].second) std::abort();
    }
  });
  return 0;
}
