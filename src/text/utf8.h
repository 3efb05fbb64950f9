// UTF-8 decoding/encoding and the few Unicode properties the tokenizers need (via utf8proc).
//
// Decoding never fails: every byte that does not begin a well-formed sequence (Unicode 3.9,
// table 3-7) becomes one U+FFFD spanning that single byte. Each decoded code point keeps its
// byte span in the original input, so tokenizers can report offsets into what the caller passed.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sieve {

/// U+FFFD, what invalid bytes decode to.
constexpr char32_t kReplacementChar = 0xFFFD;

/// One decoded code point and the bytes [begin, end) of the input it came from.
struct CodePoint {
  char32_t cp = 0;
  uint32_t begin = 0;
  uint32_t end = 0;
};

/// Decodes `s` into `out` (cleared first); invalid bytes become one U+FFFD each.
void decode_utf8(std::string_view s, std::vector<CodePoint>& out);
/// Convenience form of decode_utf8 returning the code points.
std::vector<CodePoint> decode_utf8(std::string_view s);

/// Appends the UTF-8 bytes of `cp`; surrogates and values above U+10FFFF encode as U+FFFD.
void append_utf8(std::string& out, char32_t cp);
/// Encodes a sequence of code points as UTF-8.
std::string encode_utf8(std::u32string_view cps);
/// Returns `s` with each invalid byte replaced by U+FFFD (valid input comes back unchanged).
std::string sanitize_utf8(std::string_view s);
/// Byte offset of the first invalid UTF-8 sequence in `s`, or npos when all of it is valid.
size_t first_invalid_utf8(std::string_view s);

/// Unicode full lower-case mapping of one code point (unconditional SpecialCasing included:
/// U+0130 -> "i\u0307"); writes 1 or 2 code points to `out` and returns how many.
int to_lower_full(char32_t cp, char32_t out[2]);
/// Appends the canonical decomposition (NFD, without reordering) of `cp` to `out`.
void append_nfd(char32_t cp, std::u32string& out);
/// Canonical combining class of `cp` (0 for starters).
int combining_class(char32_t cp);
/// Full NFD of a string: decomposition plus canonical ordering of combining marks.
std::u32string nfd(std::u32string_view cps);
/// Lower-cases (full mapping) every code point of a string.
std::u32string to_lower(std::u32string_view cps);

/// General category is Mn (non-spacing mark): what BERT's accent stripping removes.
bool is_nonspacing_mark(char32_t cp);
/// General category is Zs (space separator).
bool is_space_separator(char32_t cp);
/// General category is one of P* (Pc, Pd, Ps, Pe, Pi, Pf, Po).
bool is_punctuation_category(char32_t cp);
/// General category is one of C* (Cc, Cf, Cs, Co, Cn): Python's "other" characters.
bool is_other_category(char32_t cp);
/// General category is Zl or Zp (line/paragraph separator), which Python's str.split() splits on.
bool is_line_or_paragraph_separator(char32_t cp);

}  // namespace sieve
