// Internal: the pieces of BERT's basic tokenizer (src/text/wordpiece.cpp) that the WordPiece
// vocabulary trainer reuses, so that training splits text exactly as tokenization later does.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace sieve::bert {

/// What BERT's basic tokenizer does with a character: keep it in the word, drop it (controls,
/// U+FFFD), split there (whitespace), or make it a word of its own (punctuation).
enum CharClass : uint8_t { kKeep = 0, kDrop = 1, kSpace = 2, kPunct = 3 };

/// Class of a character in BERT's rules (the ASCII symbol ranges count as punctuation).
CharClass classify(char32_t cp);

/// BERT's _is_chinese_char: the CJK Unified Ideograph blocks, each put in a word of its own.
bool is_cjk(char32_t cp);

/// One character of a word after normalization and the input code point it came from.
struct NormChar {
  char32_t cp;
  uint32_t src;
};

/// Lower-cases (`lower`) and strips accents (`strip`: NFD, canonical ordering, Mn removed) one
/// whitespace-delimited word; `decomp` is scratch space. `norm` is overwritten.
void normalize_word(const std::vector<NormChar>& raw, bool lower, bool strip, std::u32string& decomp,
                    std::vector<NormChar>& norm);

}  // namespace sieve::bert
