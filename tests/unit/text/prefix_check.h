// tokenize_prefix held to the whole text's tokenization, for every tokenizer test that has inputs.
#pragma once

#include <sstream>
#include <string>
#include <string_view>

#include "sieve/tokenizer.h"

namespace sieve::test {

/// "" when tokenize_prefix(tok, text, n) is the first n pieces of tok.tokenize(text) (ids,
/// strings and offsets), else what differs first. `whole`: that tokenization, when known.
inline std::string prefix_mismatch(const Tokenizer& tok, std::string_view text, size_t n,
                                   const std::vector<TokenPiece>* whole = nullptr) {
  const std::vector<TokenPiece> all = whole ? *whole : tok.tokenize(text);
  const std::vector<TokenPiece> some = tokenize_prefix(tok, text, n);
  std::ostringstream why;
  const size_t want = std::min(n, all.size());
  if (some.size() != want) {
    why << "n " << n << ": " << some.size() << " pieces, want " << want << " (of " << all.size() << ")";
    return why.str();
  }
  for (size_t i = 0; i < want; ++i)
    if (some[i].id != all[i].id || some[i].token != all[i].token || some[i].begin != all[i].begin ||
        some[i].end != all[i].end) {
      why << "n " << n << ": piece " << i << " is '" << some[i].token << "' [" << some[i].begin << ", "
          << some[i].end << "), want '" << all[i].token << "' [" << all[i].begin << ", " << all[i].end << ")";
      return why.str();
    }
  return "";
}

/// What tokenize_prefix relies on (Tokenizer::splits_at_spaces): cut where a space follows a byte
/// that is not blank, `text`'s prefix tokenizes to the first pieces of `whole` (its tokenization).
/// Tries `tries` such cuts spread over the text; "" or the first that differs.
inline std::string cut_mismatch(const Tokenizer& tok, std::string_view text, const std::vector<TokenPiece>& whole,
                                size_t tries) {
  auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; };
  for (size_t t = 1; t <= tries; ++t) {
    size_t cut = text.size() * t / (tries + 1);
    while (cut < text.size() && !(cut > 0 && text[cut] == ' ' && !blank(text[cut - 1]))) ++cut;
    if (cut >= text.size()) break;
    const std::vector<TokenPiece> some = tok.tokenize(text.substr(0, cut));
    for (size_t i = 0; i < some.size(); ++i)
      if (i >= whole.size() || some[i].id != whole[i].id || some[i].begin != whole[i].begin || some[i].end != whole[i].end) {
        std::ostringstream why;
        why << "cut at byte " << cut << ": piece " << i << " is '" << some[i].token << "' [" << some[i].begin << ", "
            << some[i].end << ")" << (i < whole.size() ? ", the whole text's '" + whole[i].token + "'" : "");
        return why.str();
      }
  }
  return "";
}

}  // namespace sieve::test
