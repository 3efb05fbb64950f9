#include "text/utf8.h"

#include <utf8proc.h>

#include "sieve/error.h"

namespace sieve {

namespace {

// Length of the well-formed sequence starting at s[i], or 0 when s[i] cannot start one.
// Follows Unicode table 3-7 exactly, so overlongs, surrogates and values above U+10FFFF are
// rejected byte by byte (each such byte becomes its own U+FFFD).
size_t sequence_length(const unsigned char* p, size_t avail, char32_t& cp) {
  unsigned char b0 = p[0];
  if (b0 < 0x80) {
    cp = b0;
    return 1;
  }
  auto cont = [&](size_t k, unsigned char lo = 0x80, unsigned char hi = 0xBF) {
    return k < avail && p[k] >= lo && p[k] <= hi;
  };
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    if (!cont(1)) return 0;
    cp = (char32_t(b0 & 0x1F) << 6) | (p[1] & 0x3F);
    return 2;
  }
  if (b0 >= 0xE0 && b0 <= 0xEF) {
    unsigned char lo = b0 == 0xE0 ? 0xA0 : 0x80;
    unsigned char hi = b0 == 0xED ? 0x9F : 0xBF;
    if (!cont(1, lo, hi) || !cont(2)) return 0;
    cp = (char32_t(b0 & 0x0F) << 12) | (char32_t(p[1] & 0x3F) << 6) | (p[2] & 0x3F);
    return 3;
  }
  if (b0 >= 0xF0 && b0 <= 0xF4) {
    unsigned char lo = b0 == 0xF0 ? 0x90 : 0x80;
    unsigned char hi = b0 == 0xF4 ? 0x8F : 0xBF;
    if (!cont(1, lo, hi) || !cont(2) || !cont(3)) return 0;
    cp = (char32_t(b0 & 0x07) << 18) | (char32_t(p[1] & 0x3F) << 12) |
         (char32_t(p[2] & 0x3F) << 6) | (p[3] & 0x3F);
    return 4;
  }
  return 0;
}

bool is_scalar_value(char32_t cp) { return cp < 0xD800 || (cp > 0xDFFF && cp <= 0x10FFFF); }

}  // namespace

void decode_utf8(std::string_view s, std::vector<CodePoint>& out) {
  out.clear();
  out.reserve(s.size());
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  size_t i = 0;
  while (i < s.size()) {
    char32_t cp = 0;
    size_t len = sequence_length(p + i, s.size() - i, cp);
    if (len == 0) {
      out.push_back({kReplacementChar, uint32_t(i), uint32_t(i + 1)});
      ++i;
    } else {
      out.push_back({cp, uint32_t(i), uint32_t(i + len)});
      i += len;
    }
  }
}

std::vector<CodePoint> decode_utf8(std::string_view s) {
  std::vector<CodePoint> out;
  decode_utf8(s, out);
  return out;
}

void append_utf8(std::string& out, char32_t cp) {
  if (!is_scalar_value(cp)) cp = kReplacementChar;
  if (cp < 0x80) {
    out.push_back(char(cp));
  } else if (cp < 0x800) {
    out.push_back(char(0xC0 | (cp >> 6)));
    out.push_back(char(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(char(0xE0 | (cp >> 12)));
    out.push_back(char(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(char(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(char(0xF0 | (cp >> 18)));
    out.push_back(char(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(char(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(char(0x80 | (cp & 0x3F)));
  }
}

std::string encode_utf8(std::u32string_view cps) {
  std::string out;
  out.reserve(cps.size());
  for (char32_t cp : cps) append_utf8(out, cp);
  return out;
}

size_t first_invalid_utf8(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  size_t i = 0;
  while (i < s.size()) {
    if (p[i] < 0x80) {
      ++i;
      continue;
    }
    char32_t cp = 0;
    size_t len = sequence_length(p + i, s.size() - i, cp);
    if (len == 0) return i;
    i += len;
  }
  return std::string_view::npos;
}

std::string sanitize_utf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  size_t i = 0;
  while (i < s.size()) {
    char32_t cp = 0;
    size_t len = sequence_length(p + i, s.size() - i, cp);
    if (len == 0) {
      append_utf8(out, kReplacementChar);
      ++i;
    } else {
      out.append(s.data() + i, len);
      i += len;
    }
  }
  return out;
}

int to_lower_full(char32_t cp, char32_t out[2]) {
  // The only unconditional multi-code-point lower-case mapping in SpecialCasing.txt; Python's
  // str.lower() and Rust's char::to_lowercase() both apply it, utf8proc (simple mapping) does not.
  if (cp == 0x0130) {
    out[0] = U'i';
    out[1] = 0x0307;
    return 2;
  }
  if (cp < 0x80) {
    out[0] = (cp >= 'A' && cp <= 'Z') ? cp + 32 : cp;
    return 1;
  }
  if (!is_scalar_value(cp)) {
    out[0] = cp;
    return 1;
  }
  out[0] = char32_t(utf8proc_tolower(utf8proc_int32_t(cp)));
  return 1;
}

void append_nfd(char32_t cp, std::u32string& out) {
  if (cp < 0xC0 || !is_scalar_value(cp)) {  // nothing below U+00C0 decomposes canonically
    out.push_back(cp);
    return;
  }
  utf8proc_int32_t buf[8];
  int boundclass = 0;
  utf8proc_ssize_t n = utf8proc_decompose_char(utf8proc_int32_t(cp), buf, 8, UTF8PROC_DECOMPOSE,
                                               &boundclass);
  // Canonical decompositions are at most 4 code points long (Unicode stability policy).
  SIEVE_ASSERT_MSG(n > 0 && n <= 8, "utf8proc_decompose_char returned " << n << " for U+"
                                                                        << std::hex << cp);
  for (utf8proc_ssize_t k = 0; k < n; ++k) out.push_back(char32_t(buf[k]));
}

int combining_class(char32_t cp) {
  if (cp < 0x300 || !is_scalar_value(cp)) return 0;
  return utf8proc_get_property(utf8proc_int32_t(cp))->combining_class;
}

std::u32string nfd(std::u32string_view cps) {
  std::u32string out;
  out.reserve(cps.size());
  for (char32_t cp : cps) append_nfd(cp, out);
  // Canonical ordering: stable sort by combining class within each run of non-starters.
  for (size_t i = 1; i < out.size(); ++i) {
    int cc = combining_class(out[i]);
    if (cc == 0) continue;
    size_t j = i;
    char32_t c = out[i];
    while (j > 0 && combining_class(out[j - 1]) > cc) {
      out[j] = out[j - 1];
      --j;
    }
    out[j] = c;
  }
  return out;
}

std::u32string to_lower(std::u32string_view cps) {
  std::u32string out;
  out.reserve(cps.size());
  char32_t buf[2];
  for (char32_t cp : cps) {
    int n = to_lower_full(cp, buf);
    out.append(buf, size_t(n));
  }
  return out;
}

namespace {
utf8proc_category_t category(char32_t cp) {
  if (!is_scalar_value(cp)) return cp > 0x10FFFF ? UTF8PROC_CATEGORY_CN : UTF8PROC_CATEGORY_CS;
  return utf8proc_category(utf8proc_int32_t(cp));
}
}  // namespace

bool is_nonspacing_mark(char32_t cp) { return cp >= 0x300 && category(cp) == UTF8PROC_CATEGORY_MN; }

bool is_space_separator(char32_t cp) {
  if (cp < 0x80) return cp == ' ';
  return category(cp) == UTF8PROC_CATEGORY_ZS;
}

bool is_punctuation_category(char32_t cp) {
  switch (category(cp)) {
    case UTF8PROC_CATEGORY_PC:
    case UTF8PROC_CATEGORY_PD:
    case UTF8PROC_CATEGORY_PS:
    case UTF8PROC_CATEGORY_PE:
    case UTF8PROC_CATEGORY_PI:
    case UTF8PROC_CATEGORY_PF:
    case UTF8PROC_CATEGORY_PO:
      return true;
    default:
      return false;
  }
}

bool is_other_category(char32_t cp) {
  switch (category(cp)) {
    case UTF8PROC_CATEGORY_CC:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_CS:
    case UTF8PROC_CATEGORY_CO:
    case UTF8PROC_CATEGORY_CN:
      return true;
    default:
      return false;
  }
}

bool is_line_or_paragraph_separator(char32_t cp) {
  auto c = category(cp);
  return c == UTF8PROC_CATEGORY_ZL || c == UTF8PROC_CATEGORY_ZP;
}

}  // namespace sieve
