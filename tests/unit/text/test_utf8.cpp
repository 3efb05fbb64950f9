// UTF-8 decoding and the Unicode helpers, checked against the Unicode standard's own tables
// (code point values, UnicodeData categories and combining classes, canonical decompositions).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "text/utf8.h"

namespace sieve {
namespace {

std::u32string cps_of(const std::vector<CodePoint>& v) {
  std::u32string s;
  for (const auto& c : v) s.push_back(c.cp);
  return s;
}

TEST(Utf8, DecodesAsciiAndMultiByteWithSpans) {
  // "aé中😀": 1 + 2 + 3 + 4 bytes.
  std::string s = "a\xC3\xA9\xE4\xB8\xAD\xF0\x9F\x98\x80";
  auto v = decode_utf8(s);
  ASSERT_EQ(v.size(), 4u);
  EXPECT_EQ(cps_of(v), (std::u32string{U'a', 0xE9, 0x4E2D, 0x1F600}));
  EXPECT_EQ(v[0].begin, 0u);
  EXPECT_EQ(v[0].end, 1u);
  EXPECT_EQ(v[1].begin, 1u);
  EXPECT_EQ(v[1].end, 3u);
  EXPECT_EQ(v[2].begin, 3u);
  EXPECT_EQ(v[2].end, 6u);
  EXPECT_EQ(v[3].begin, 6u);
  EXPECT_EQ(v[3].end, 10u);
}

TEST(Utf8, EmptyInput) { EXPECT_TRUE(decode_utf8("").empty()); }

TEST(Utf8, EachInvalidByteBecomesOneReplacementChar) {
  const char32_t R = kReplacementChar;
  // Lone continuation byte.
  EXPECT_EQ(cps_of(decode_utf8("a\x80" "b")), (std::u32string{U'a', R, U'b'}));
  // Overlong encoding of '/' (C0 AF) and of NUL (C0 80): both bytes invalid.
  EXPECT_EQ(cps_of(decode_utf8("\xC0\xAF")), (std::u32string{R, R}));
  // UTF-16 surrogate U+D800 encoded as ED A0 80 is ill-formed.
  EXPECT_EQ(cps_of(decode_utf8("\xED\xA0\x80")), (std::u32string{R, R, R}));
  // Above U+10FFFF (F4 90 80 80) and bytes that never occur (F5, FF).
  EXPECT_EQ(cps_of(decode_utf8("\xF4\x90\x80\x80")), (std::u32string{R, R, R, R}));
  EXPECT_EQ(cps_of(decode_utf8("\xF5\xFF")), (std::u32string{R, R}));
  // A sequence cut short by the end of the input or by an ASCII byte.
  EXPECT_EQ(cps_of(decode_utf8("x\xE4\xB8")), (std::u32string{U'x', R, R}));
  EXPECT_EQ(cps_of(decode_utf8("\xE4\xB8" "A")), (std::u32string{R, R, U'A'}));
  // The largest valid code point still decodes.
  EXPECT_EQ(cps_of(decode_utf8("\xF4\x8F\xBF\xBF")), (std::u32string{0x10FFFF}));
}

TEST(Utf8, InvalidBytesKeepTheirOriginalSpans) {
  auto v = decode_utf8("h\xFF\xC3\xA9");
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(v[1].cp, kReplacementChar);
  EXPECT_EQ(v[1].begin, 1u);
  EXPECT_EQ(v[1].end, 2u);
  EXPECT_EQ(v[2].cp, 0xE9u);
  EXPECT_EQ(v[2].begin, 2u);
  EXPECT_EQ(v[2].end, 4u);
}

TEST(Utf8, EncodeMatchesKnownBytes) {
  EXPECT_EQ(encode_utf8(U"a"), "a");
  EXPECT_EQ(encode_utf8(std::u32string{0xE9}), "\xC3\xA9");
  EXPECT_EQ(encode_utf8(std::u32string{0x20AC}), "\xE2\x82\xAC");  // euro sign
  EXPECT_EQ(encode_utf8(std::u32string{0x1F600}), "\xF0\x9F\x98\x80");
  // Not a scalar value: surrogate, beyond the code space.
  EXPECT_EQ(encode_utf8(std::u32string{0xD800}), "\xEF\xBF\xBD");
  EXPECT_EQ(encode_utf8(std::u32string{0x110000}), "\xEF\xBF\xBD");
}

TEST(Utf8, SanitizeReplacesOnlyInvalidBytes) {
  EXPECT_EQ(sanitize_utf8("caf\xC3\xA9"), "caf\xC3\xA9");
  EXPECT_EQ(sanitize_utf8("a\xFF" "b"), "a\xEF\xBF\xBD" "b");
  EXPECT_EQ(sanitize_utf8("\xE4\xB8"), "\xEF\xBF\xBD\xEF\xBF\xBD");
}

TEST(Utf8, LowerCaseFullMapping) {
  char32_t out[2];
  ASSERT_EQ(to_lower_full(U'A', out), 1);
  EXPECT_EQ(out[0], U'a');
  ASSERT_EQ(to_lower_full(0xC9, out), 1);  // É -> é
  EXPECT_EQ(out[0], 0xE9u);
  ASSERT_EQ(to_lower_full(0x3A3, out), 1);  // Σ -> σ (per character, no final-sigma rule)
  EXPECT_EQ(out[0], 0x3C3u);
  ASSERT_EQ(to_lower_full(0x130, out), 2);  // İ -> i + combining dot above (SpecialCasing.txt)
  EXPECT_EQ(out[0], U'i');
  EXPECT_EQ(out[1], 0x307u);
  ASSERT_EQ(to_lower_full(0x4E2D, out), 1);  // uncased
  EXPECT_EQ(out[0], 0x4E2Du);
  EXPECT_EQ(to_lower(U"ABC"), U"abc");
}

TEST(Utf8, CanonicalDecomposition) {
  EXPECT_EQ(nfd(std::u32string{0xE9}), (std::u32string{U'e', 0x301}));         // é
  EXPECT_EQ(nfd(std::u32string{0xC5}), (std::u32string{U'A', 0x30A}));         // Å
  EXPECT_EQ(nfd(std::u32string{0x212B}), (std::u32string{U'A', 0x30A}));       // Ångström sign
  EXPECT_EQ(nfd(std::u32string{0x1E69}), (std::u32string{U's', 0x323, 0x307})); // ṩ
  EXPECT_EQ(nfd(std::u32string{0xAC00}), (std::u32string{0x1100, 0x1161}));    // Hangul 가
  // Compatibility decompositions are not canonical: the fi ligature stays.
  EXPECT_EQ(nfd(std::u32string{0xFB01}), (std::u32string{0xFB01}));
  // Canonical ordering: acute (ccc 230) after dot below (ccc 220).
  EXPECT_EQ(nfd(std::u32string{U'a', 0x301, 0x323}), (std::u32string{U'a', 0x323, 0x301}));
  EXPECT_EQ(combining_class(0x301), 230);
  EXPECT_EQ(combining_class(0x323), 220);
  EXPECT_EQ(combining_class(U'a'), 0);
}

TEST(Utf8, GeneralCategories) {
  EXPECT_TRUE(is_nonspacing_mark(0x301));
  EXPECT_TRUE(is_nonspacing_mark(0x3099));  // kana voiced sound mark
  EXPECT_FALSE(is_nonspacing_mark(U'e'));
  EXPECT_TRUE(is_space_separator(U' '));
  EXPECT_TRUE(is_space_separator(0xA0));
  EXPECT_TRUE(is_space_separator(0x3000));
  EXPECT_FALSE(is_space_separator(U'\t'));  // Cc, not Zs
  EXPECT_TRUE(is_punctuation_category(U'!'));
  EXPECT_TRUE(is_punctuation_category(0x2014));  // em dash, Pd
  EXPECT_TRUE(is_punctuation_category(0x300C));  // 「, Ps
  EXPECT_FALSE(is_punctuation_category(U'$'));   // Sc
  EXPECT_FALSE(is_punctuation_category(U'a'));
  EXPECT_TRUE(is_other_category(0x07));    // Cc
  EXPECT_TRUE(is_other_category(0x200B));  // zero width space, Cf
  EXPECT_TRUE(is_other_category(0xE000));  // private use, Co
  EXPECT_FALSE(is_other_category(U'a'));
  EXPECT_TRUE(is_line_or_paragraph_separator(0x2028));
  EXPECT_TRUE(is_line_or_paragraph_separator(0x2029));
  EXPECT_FALSE(is_line_or_paragraph_separator(U'\n'));
}

}  // namespace
}  // namespace sieve
