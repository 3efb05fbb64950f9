// Hugging Face tokenizer.json on arbitrary bytes: the whole pipeline reader (added tokens,
// normalizers, pre-tokenizers, BPE/Unigram/WordPiece/WordLevel models, post-processors). A file
// that loads is then used once, on a fixed text and on its own bytes.
#include "fuzz_target.h"
#include "sieve/tokenizer.h"

SIEVE_FUZZ_TARGET(tokenizer_json) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  sieve::fuzz::expect_only_sieve_errors([&] {
    auto tok = sieve::parse_tokenizer_json(text);
    sieve::EncodeOptions o;
    o.max_length = 64;
    tok->encode("Hello, world! The dog bit the man.", o);
    tok->encode(text.substr(0, 256), o);
  });
  return 0;
}
