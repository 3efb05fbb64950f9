// WordPiece as Hugging Face's BertTokenizer / BertTokenizerFast: BERT's basic tokenizer (text
// cleaning, CJK spacing, lower-casing, accent stripping, whitespace and punctuation splitting)
// followed by greedy longest-match-first WordPiece.
//
// Every character carries the index of the input code point it came from, so offsets survive
// lower-casing and NFD (which may change the number of characters and bytes).
#include <algorithm>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/file_util.h"
#include "sieve/error.h"
#include "sieve/tokenizer.h"
#include "text/bert_basic.h"
#include "text/utf8.h"

namespace sieve {

namespace bert {

namespace {

// Class of an ASCII character in BERT's rules: NUL and other controls are dropped (\t \n \r
// count as whitespace), and the four ASCII symbol ranges count as punctuation even where Unicode
// calls them symbols ($, +, <, ^, `, |, ~).
struct AsciiTable {
  CharClass cls[128];
  AsciiTable() {
    for (int c = 0; c < 128; ++c) {
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') cls[c] = kSpace;
      else if (c < 32 || c == 127) cls[c] = kDrop;
      else if ((c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) ||
               (c >= 123 && c <= 126))
        cls[c] = kPunct;
      else cls[c] = kKeep;
    }
  }
};
const AsciiTable kAscii;

}  // namespace

// BERT's _is_chinese_char: the CJK Unified Ideograph blocks (not Japanese kana or Hangul).
bool is_cjk(char32_t cp) {
  return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) ||
         (cp >= 0x20000 && cp <= 0x2A6DF) || (cp >= 0x2A700 && cp <= 0x2B73F) ||
         (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B820 && cp <= 0x2CEAF) ||
         (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

// Class of a character in the cleaned text. Whitespace includes Zl/Zp because Python's
// str.split() (slow tokenizer) and Rust's char::is_whitespace (fast tokenizer) both split there.
CharClass classify(char32_t cp) {
  if (cp < 128) return kAscii.cls[cp];
  if (cp == kReplacementChar) return kDrop;
  if (is_space_separator(cp) || is_line_or_paragraph_separator(cp)) return kSpace;
  if (is_other_category(cp)) return kDrop;  // BERT's _is_control: every C* category
  if (is_punctuation_category(cp)) return kPunct;
  return kKeep;
}

void normalize_word(const std::vector<NormChar>& raw, bool lower, bool strip, std::u32string& decomp,
                    std::vector<NormChar>& norm) {
  norm.clear();
  if (!lower && !strip) {
    norm = raw;
    return;
  }
  char32_t low[2];
  for (const NormChar& rc : raw) {
    int m = 1;
    low[0] = rc.cp;
    if (lower) m = to_lower_full(rc.cp, low);
    for (int j = 0; j < m; ++j) {
      char32_t c = low[j];
      if (!strip || c < 0xC0) {  // nothing below U+00C0 decomposes or is a mark
        norm.push_back({c, rc.src});
        continue;
      }
      decomp.clear();
      append_nfd(c, decomp);
      for (char32_t d : decomp) norm.push_back({d, rc.src});
    }
  }
  if (!strip) return;
  // Canonical ordering (the rest of NFD) before dropping Mn marks: it only matters for the
  // rare marks that are not Mn, but it keeps the result identical to unicodedata.normalize.
  for (size_t i = 1; i < norm.size(); ++i) {
    if (norm[i].cp < 0x300) continue;
    int cc = combining_class(norm[i].cp);
    if (cc == 0) continue;
    NormChar c = norm[i];
    size_t j = i;
    while (j > 0 && combining_class(norm[j - 1].cp) > cc) {
      norm[j] = norm[j - 1];
      --j;
    }
    norm[j] = c;
  }
  size_t w = 0;
  for (size_t i = 0; i < norm.size(); ++i)
    if (!is_nonspacing_mark(norm[i].cp)) norm[w++] = norm[i];
  norm.resize(w);
}

}  // namespace bert

namespace {

using bert::CharClass;
using bert::classify;
using bert::is_cjk;
using bert::kDrop;
using bert::kKeep;
using bert::kPunct;
using bert::kSpace;
using bert::NormChar;

class WordPieceTokenizer final : public Tokenizer {
 public:
  WordPieceTokenizer(std::vector<std::string> vocab, const WordPieceOptions& opt)
      : vocab_(std::move(vocab)), opt_(opt) {
    SIEVE_THROW_IF_NOT(!vocab_.empty(), "WordPiece vocabulary is empty; pass a vocab.txt with one "
                                        "token per line");
    SIEVE_THROW_IF_NOT(vocab_.size() < size_t(INT32_MAX), "WordPiece vocabulary too large");
    SIEVE_THROW_IF_NOT(opt_.model_max_length > 0, "model_max_length must be positive");
    lower_ = opt_.do_lower_case;
    strip_ = opt_.strip_accents_set ? opt_.strip_accents : opt_.do_lower_case;
    // The views point into vocab_, which is never modified after this point. Later duplicates
    // win, as in Hugging Face's load_vocab (a dict filled line by line).
    const std::string& pre = opt_.continuing_prefix;
    full_.reserve(vocab_.size() * 2);
    for (size_t i = 0; i < vocab_.size(); ++i) {
      std::string_view t = vocab_[i];
      full_[t] = int32_t(i);
      max_full_bytes_ = std::max(max_full_bytes_, t.size());
      if (!pre.empty() && t.size() > pre.size() && t.compare(0, pre.size(), pre) == 0) {
        std::string_view rest = t.substr(pre.size());
        suffix_[rest] = int32_t(i);
        max_suffix_bytes_ = std::max(max_suffix_bytes_, rest.size());
      }
    }
    auto find = [&](std::string_view t) {
      auto it = full_.find(t);
      return it == full_.end() ? -1 : it->second;
    };
    special_.unk = find(opt_.unk_token);
    SIEVE_THROW_IF_NOT(special_.unk >= 0, "WordPiece vocabulary lacks the unknown token '"
                                              << opt_.unk_token << "'");
    special_.pad = find("[PAD]");
    special_.cls = find("[CLS]");
    special_.sep = find("[SEP]");
    special_.mask = find("[MASK]");
    // Hugging Face splits special tokens out of the raw text before normalization, so a literal
    // "[MASK]" in the input becomes the [MASK] id rather than "[", "mask", "]".
    for (const std::string& s : {opt_.unk_token, std::string("[PAD]"), std::string("[CLS]"),
                                 std::string("[SEP]"), std::string("[MASK]")}) {
      int32_t id = find(s);
      bool seen = std::any_of(specials_in_text_.begin(), specials_in_text_.end(),
                              [&](const auto& e) { return e.first == s; });
      if (id >= 0 && !s.empty() && !seen) specials_in_text_.push_back({s, id});
    }
    std::stable_sort(specials_in_text_.begin(), specials_in_text_.end(),
                     [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
    for (const auto& e : specials_in_text_) {
      auto b0 = static_cast<unsigned char>(e.first[0]);
      if (b0 < 128) special_start_[b0] = true;  // non-ASCII-initial specials are not matched
    }
  }

  // BERT splits words at whitespace before anything else (its specials hold none).
  bool splits_at_spaces() const override { return true; }
  std::vector<TokenPiece> tokenize(std::string_view text) const override {
    SIEVE_THROW_IF_NOT(text.size() < size_t(UINT32_MAX), "text too long to tokenize ("
                                                             << text.size() << " bytes)");
    Scratch s;
    decode_utf8(text, s.cps);
    std::vector<TokenPiece> out;
    out.reserve(text.size() / 3 + 4);
    const size_t n = s.cps.size();
    for (size_t i = 0; i < n; ++i) {
      char32_t cp = s.cps[i].cp;
      if (cp < 128 && special_start_[cp]) {
        size_t pos = s.cps[i].begin;
        const std::pair<std::string, int32_t>* hit = nullptr;
        for (const auto& sp : specials_in_text_) {
          if (text.compare(pos, sp.first.size(), sp.first) == 0) {
            hit = &sp;
            break;  // sorted longest first
          }
        }
        if (hit) {
          flush_word(s, out);
          size_t end = pos + hit->first.size();
          out.push_back({hit->second, hit->first, pos, end});
          while (i + 1 < n && s.cps[i + 1].begin < end) ++i;
          continue;
        }
      }
      CharClass c = classify(cp);
      if (c == kDrop) continue;
      if (c == kSpace) {
        flush_word(s, out);
        continue;
      }
      if (cp >= 0x3400 && opt_.tokenize_chinese_chars && is_cjk(cp)) {
        flush_word(s, out);
        s.raw.push_back({cp, uint32_t(i)});
        flush_word(s, out);
        continue;
      }
      s.raw.push_back({cp, uint32_t(i)});
    }
    flush_word(s, out);
    return out;
  }

  int32_t token_to_id(std::string_view token) const override {
    auto it = full_.find(token);
    return it == full_.end() ? special_.unk : it->second;
  }

  std::string id_to_token(int32_t id) const override {
    SIEVE_THROW_IF_NOT(id >= 0 && size_t(id) < vocab_.size(),
                       "token id " << id << " out of range [0, " << vocab_.size() << ")");
    return vocab_[size_t(id)];
  }

  size_t vocab_size() const override { return vocab_.size(); }
  SpecialTokens special_tokens() const override { return special_; }
  size_t model_max_length() const override { return opt_.model_max_length; }

 private:
  // Per-call buffers, reused across the words of one text so the hot loop does not allocate.
  struct Scratch {
    std::vector<CodePoint> cps;
    std::vector<NormChar> raw;   // the current whitespace-delimited word, as in the input
    std::vector<NormChar> norm;  // the same word after lower-casing / accent stripping
    std::u32string decomp;
    std::string bytes;           // UTF-8 of the sub-word being matched
    std::vector<uint32_t> char_off;  // byte offset of each character in `bytes`
  };

  // Normalizes the pending word, splits it on punctuation and runs WordPiece on each part.
  void flush_word(Scratch& s, std::vector<TokenPiece>& out) const {
    if (s.raw.empty()) return;
    normalize(s);
    s.raw.clear();
    size_t start = 0;
    const size_t n = s.norm.size();
    for (size_t k = 0; k < n; ++k) {
      // Classes are re-checked after normalization, as Hugging Face splits the normalized text:
      // NFD can turn a symbol into ASCII punctuation (U+1FEF -> '`').
      CharClass c = classify(s.norm[k].cp);
      if (c == kKeep) continue;
      if (k > start) wordpiece(s, start, k, out);
      if (c == kPunct) wordpiece(s, k, k + 1, out);
      start = k + 1;
    }
    if (n > start) wordpiece(s, start, n, out);
  }

  void normalize(Scratch& s) const { bert::normalize_word(s.raw, lower_, strip_, s.decomp, s.norm); }

  // Byte span in the input of normalized characters [a, b).
  std::pair<size_t, size_t> span(const Scratch& s, size_t a, size_t b) const {
    uint32_t lo = UINT32_MAX, hi = 0;
    for (size_t k = a; k < b; ++k) {
      const CodePoint& c = s.cps[s.norm[k].src];
      lo = std::min(lo, c.begin);
      hi = std::max(hi, c.end);
    }
    return {lo, hi};
  }

  // Greedy longest-match-first WordPiece over normalized characters [a, b).
  void wordpiece(Scratch& s, size_t a, size_t b, std::vector<TokenPiece>& out) const {
    const size_t n = b - a;
    if (n > opt_.max_input_chars_per_word) {
      auto sp = span(s, a, b);
      out.push_back({special_.unk, opt_.unk_token, sp.first, sp.second});
      return;
    }
    s.bytes.clear();
    s.char_off.clear();
    for (size_t k = a; k < b; ++k) {
      s.char_off.push_back(uint32_t(s.bytes.size()));
      append_utf8(s.bytes, s.norm[k].cp);
    }
    s.char_off.push_back(uint32_t(s.bytes.size()));
    const size_t first_out = out.size();
    const std::string_view word = s.bytes;
    size_t start = 0;
    while (start < n) {
      const bool head = start == 0;
      const auto& map = head ? full_ : suffix_;
      const size_t max_bytes = head ? max_full_bytes_ : max_suffix_bytes_;
      int32_t id = -1;
      size_t end = n;
      // Candidates longer than the longest vocabulary entry cannot match: skip them.
      while (end > start && s.char_off[end] - s.char_off[start] > max_bytes) --end;
      for (; end > start; --end) {
        auto it = map.find(word.substr(s.char_off[start], s.char_off[end] - s.char_off[start]));
        if (it != map.end()) {
          id = it->second;
          break;
        }
      }
      if (id < 0) {  // the whole word becomes one [UNK]
        out.resize(first_out);
        auto sp = span(s, a, b);
        out.push_back({special_.unk, opt_.unk_token, sp.first, sp.second});
        return;
      }
      auto sp = span(s, a + start, a + end);
      out.push_back({id, vocab_[size_t(id)], sp.first, sp.second});
      start = end;
    }
  }

  std::vector<std::string> vocab_;
  WordPieceOptions opt_;
  bool lower_ = true;
  bool strip_ = true;
  std::unordered_map<std::string_view, int32_t> full_;    // every token, as written
  std::unordered_map<std::string_view, int32_t> suffix_;  // "##xyz" entries keyed by "xyz"
  size_t max_full_bytes_ = 0;
  size_t max_suffix_bytes_ = 0;
  SpecialTokens special_;
  std::vector<std::pair<std::string, int32_t>> specials_in_text_;  // longest first
  bool special_start_[128] = {};  // ASCII bytes that can start a special token
};

}  // namespace

std::unique_ptr<Tokenizer> make_wordpiece_tokenizer(std::vector<std::string> vocab,
                                                    const WordPieceOptions& opt) {
  return std::make_unique<WordPieceTokenizer>(std::move(vocab), opt);
}

std::vector<std::string> read_vocab_txt(const std::string& path) {
  std::string data = read_file(path);
  std::vector<std::string> vocab;
  size_t pos = 0;
  while (pos < data.size()) {
    size_t nl = data.find('\n', pos);
    size_t end = nl == std::string::npos ? data.size() : nl;
    size_t stop = end;
    if (stop > pos && data[stop - 1] == '\r') --stop;  // tolerate CRLF files
    vocab.emplace_back(data, pos, stop - pos);
    pos = end + 1;
  }
  SIEVE_THROW_IF_NOT(!vocab.empty(), "vocabulary file '" << path << "' is empty");
  return vocab;
}

}  // namespace sieve
