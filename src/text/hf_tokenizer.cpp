// A Tokenizer read from a Hugging Face tokenizer.json: added tokens are cut out first (the ones
// marked `normalized: false` from the raw text, the others from the normalized text, as
// tokenizers' AddedVocabulary does), then each remaining piece is normalized, pre-tokenized and
// tokenized by the model; the post-processor becomes the framing of encode()/encode_pair().
#include "text/hf_tokenizer.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "core/file_util.h"
#include "sieve/error.h"
#include "text/utf8.h"

namespace sieve {

namespace {

using hf::json;
using hf::NChar;
using hf::NStr;

constexpr size_t kDefaultMaxLength = 512;

// Rust regex's \w, which tokenizers uses to decide whether a single_word token touches a word.
bool is_word_char(char32_t c) {
  return hf::rust_is_alphanumeric(c) || hf::is_mark(c) || c == '_' || c == 0x200C || c == 0x200D;
}

struct AddedToken {
  std::string content;
  std::u32string match;  // what is searched for: content, normalized when `normalized`
  int32_t id = -1;
  bool special = false, lstrip = false, rstrip = false, single_word = false, normalized = false;
};

// A piece of the input: text still to tokenize, or an added token already matched.
struct Piece {
  NStr s;
  int32_t added = -1;  // index into the added tokens, or -1
};

// Added tokens grouped by first character, longest first, for leftmost-longest matching.
class AddedMatcher {
 public:
  void build(const std::vector<AddedToken>& all, bool normalized) {
    for (size_t i = 0; i < all.size(); ++i)
      if (all[i].normalized == normalized && !all[i].match.empty())
        by_first_[all[i].match[0]].push_back(i);
    for (auto& [c, list] : by_first_)
      std::stable_sort(list.begin(), list.end(), [&](size_t a, size_t b) {
        return all[a].match.size() > all[b].match.size();
      });
  }
  bool empty() const { return by_first_.empty(); }

  // Splits `s` around the added tokens it contains (tokenizers' find_matches rules).
  void split(const std::vector<AddedToken>& all, NStr s, std::vector<Piece>& out) const {
    const size_t n = s.size();
    size_t pos = 0, start_offset = 0;
    while (pos < n) {
      auto it = by_first_.find(s[pos].cp);
      size_t found = SIZE_MAX;
      if (it != by_first_.end()) {
        for (size_t idx : it->second) {
          const std::u32string& m = all[idx].match;
          if (pos + m.size() > n) continue;
          bool eq = true;
          for (size_t k = 1; k < m.size() && eq; ++k) eq = s[pos + k].cp == m[k];
          if (eq) {
            found = idx;
            break;
          }
        }
      }
      if (found == SIZE_MAX) {
        ++pos;
        continue;
      }
      const AddedToken& t = all[found];
      size_t start = pos, stop = pos + t.match.size();
      pos = stop;
      if (t.single_word) {
        bool start_ok = start == 0 || !is_word_char(s[start - 1].cp);
        bool stop_ok = stop == n || !is_word_char(s[stop].cp);
        if (!start_ok || !stop_ok) continue;
      }
      if (t.lstrip) {
        size_t b = start;
        while (b > 0 && hf::rust_is_whitespace(s[b - 1].cp)) --b;
        start = std::max(b, start_offset);
      }
      if (t.rstrip) {
        while (stop < n && hf::rust_is_whitespace(s[stop].cp)) ++stop;
        pos = stop;
      }
      if (start_offset < start)
        out.push_back({NStr(s.begin() + long(start_offset), s.begin() + long(start)), -1});
      out.push_back({NStr(s.begin() + long(start), s.begin() + long(stop)), int32_t(found)});
      start_offset = stop;
    }
    if (start_offset == 0) {
      out.push_back({std::move(s), -1});
    } else if (start_offset < n) {
      out.push_back({NStr(s.begin() + long(start_offset), s.end()), -1});
    }
  }

 private:
  std::unordered_map<char32_t, std::vector<size_t>> by_first_;
};

class HfTokenizer final : public Tokenizer {
 public:
  HfTokenizer(const json& j, const TokenizerJsonOptions& opt, const std::string& name) {
    SIEVE_THROW_IF_NOT(j.is_object(), name << ": expected a JSON object");
    SIEVE_THROW_IF_NOT(j.contains("model"), name << ": missing 'model'");
    model_ = hf::make_model(j["model"], "model");
    if (j.contains("normalizer") && !j["normalizer"].is_null())
      normalizer_ = hf::make_normalizer(j["normalizer"], "normalizer");
    if (j.contains("pre_tokenizer") && !j["pre_tokenizer"].is_null())
      pre_ = hf::make_pre_tokenizer(j["pre_tokenizer"], "pre_tokenizer");
    read_added_tokens(j);
    if (j.contains("post_processor") && !j["post_processor"].is_null()) {
      framing_ = std::make_unique<Framing>();
      read_post_processor(j["post_processor"], "post_processor");
    } else {
      // No post-processor: tokenizers adds nothing, even with add_special_tokens.
      framing_ = std::make_unique<Framing>();
      framing_->single = {FramePart{0, {}, {}, 0}};
      framing_->pair = {FramePart{0, {}, {}, 0}, FramePart{1, {}, {}, 1}};
    }
    max_length_ = opt.model_max_length;
    if (!max_length_ && j.contains("truncation") && j["truncation"].is_object()) {
      const json& ml = j["truncation"].value("max_length", json());
      if (ml.is_number_unsigned() && ml.get<size_t>() > 0) max_length_ = ml.get<size_t>();
    }
    if (!max_length_) max_length_ = kDefaultMaxLength;
    find_special_tokens(j);
    // Tokens never span a space when the pre-tokenizer splits there, the normalizer keeps every
    // space where it was, and no added token holds one.
    splits_at_spaces_ = pre_ && pre_->splits_at_space() && (!normalizer_ || normalizer_->keeps_spaces()) &&
                        std::none_of(added_.begin(), added_.end(), [](const AddedToken& a) {
                          return a.content.find_first_of(" \t\n\r") != std::string::npos;
                        });
  }

  bool splits_at_spaces() const override { return splits_at_spaces_; }

  std::vector<TokenPiece> tokenize(std::string_view text) const override {
    std::vector<CodePoint> cps = decode_utf8(text);
    NStr s;
    s.reserve(cps.size());
    for (const CodePoint& c : cps) s.push_back({c.cp, c.begin, c.end});
    std::vector<Piece> pieces;
    if (raw_.empty()) pieces.push_back({std::move(s), -1});
    else raw_.split(added_, std::move(s), pieces);
    std::vector<Piece> pieces2;
    pieces2.reserve(pieces.size());
    for (Piece& p : pieces) {
      if (p.added >= 0) {
        pieces2.push_back(std::move(p));
        continue;
      }
      if (normalizer_) normalizer_->normalize(p.s);
      if (normalized_.empty() || p.s.empty()) pieces2.push_back(std::move(p));
      else normalized_.split(added_, std::move(p.s), pieces2);
    }
    std::vector<TokenPiece> out;
    std::vector<NStr> splits;
    std::vector<hf::ModelToken> toks;
    std::vector<uint32_t> starts;
    for (Piece& p : pieces2) {
      if (p.s.empty()) continue;
      if (p.added >= 0) {
        const AddedToken& t = added_[size_t(p.added)];
        auto [b, e] = span(p.s, 0, p.s.size());
        // The token's string is the matched text, stripped whitespace included.
        out.push_back({t.id, hf::to_utf8(p.s), b, e});
        continue;
      }
      splits.clear();
      splits.push_back(std::move(p.s));
      if (pre_) pre_->pre_tokenize(splits);
      for (const NStr& sp : splits) {
        std::string utf8 = hf::to_utf8(sp, &starts);
        toks.clear();
        model_->tokenize(utf8, starts, toks);
        for (hf::ModelToken& t : toks) {
          auto [b, e] = span(sp, t.begin, t.end);
          out.push_back({t.id, std::move(t.token), b, e});
        }
      }
    }
    if (trim_offsets_) trim_offsets(out);
    return out;
  }

  int32_t token_to_id(std::string_view token) const override {
    auto it = added_by_content_.find(std::string(token));
    if (it != added_by_content_.end()) return it->second;
    int32_t id = model_->find(token);
    return id >= 0 ? id : model_->unk_id();
  }
  std::string id_to_token(int32_t id) const override {
    auto it = added_by_id_.find(id);
    if (it != added_by_id_.end()) return it->second;
    const std::string* t = model_->token_of(id);
    SIEVE_THROW_IF_NOT(t != nullptr, "token id " << id << " is out of range (vocabulary size "
                                                 << vocab_size() << ")");
    return *t;
  }
  size_t vocab_size() const override {
    size_t n = model_->size();
    for (const AddedToken& t : added_) n = std::max(n, size_t(t.id) + 1);
    return n;
  }
  SpecialTokens special_tokens() const override { return special_; }
  size_t model_max_length() const override { return max_length_; }
  const Framing* framing() const override { return framing_.get(); }

 private:
  // Original byte span of characters [b, e) of a normalized string.
  static std::pair<size_t, size_t> span(const NStr& s, size_t b, size_t e) {
    if (b >= e || e > s.size()) return {0, 0};
    uint32_t lo = s[b].b, hi = s[b].e;
    for (size_t i = b + 1; i < e; ++i) {
      lo = std::min(lo, s[i].b);
      hi = std::max(hi, s[i].e);
    }
    return {lo, hi};
  }

  // ByteLevel's trim_offsets: leading/trailing spaces ('Ġ' or whitespace) leave the span.
  void trim_offsets(std::vector<TokenPiece>& out) const {
    const char32_t space = hf::byte_level_alphabet()[' '];
    for (size_t i = 0; i < out.size(); ++i) {
      TokenPiece& t = out[i];
      std::vector<CodePoint> cps = decode_utf8(t.token);
      auto is_sp = [&](char32_t c) { return c == space || hf::rust_is_whitespace(c); };
      size_t lead = 0, trail = 0;
      while (lead < cps.size() && is_sp(cps[lead].cp)) ++lead;
      while (trail < cps.size() && is_sp(cps[cps.size() - 1 - trail].cp)) ++trail;
      if (lead == 0 && trail == 0) continue;
      if (lead > 0) {
        bool first = i == 0 || t.begin == 0;
        if (first && trim_add_prefix_space_ && lead == 1) lead = 0;
        t.begin = std::min(t.begin + lead, t.end);
      }
      if (trail > 0 && t.end >= trail) t.end = std::max(t.end - trail, t.begin);
    }
  }

  void read_added_tokens(const json& j) {
    auto it = j.find("added_tokens");
    if (it == j.end() || it->is_null()) return;
    SIEVE_THROW_IF_NOT(it->is_array(), "added_tokens: expected an array");
    for (size_t i = 0; i < it->size(); ++i) {
      const json& a = (*it)[i];
      std::string where = "added_tokens[" + std::to_string(i) + "]";
      SIEVE_THROW_IF_NOT(a.is_object(), where << ": expected an object");
      AddedToken t;
      const json& c = hf::member(a, "content", where);
      SIEVE_THROW_IF_NOT(c.is_string(), where << ".content: expected a string");
      t.content = c.get<std::string>();
      t.special = hf::get_bool(a, "special", false, where);
      t.lstrip = hf::get_bool(a, "lstrip", false, where);
      t.rstrip = hf::get_bool(a, "rstrip", false, where);
      t.single_word = hf::get_bool(a, "single_word", false, where);
      t.normalized = hf::get_bool(a, "normalized", !t.special, where);
      int32_t model_id = model_->find(t.content);
      if (model_id >= 0) {
        t.id = model_id;
      } else {
        const json& id = hf::member(a, "id", where);
        SIEVE_THROW_IF_NOT(id.is_number_unsigned(), where << ".id: expected a non-negative integer");
        t.id = int32_t(id.get<uint32_t>());
      }
      NStr m = hf::from_utf8(t.content, 0, 0);
      if (t.normalized && normalizer_) normalizer_->normalize(m);
      for (const NChar& ch : m) t.match.push_back(ch.cp);
      added_by_content_[t.content] = t.id;
      added_by_id_[t.id] = t.content;
      added_.push_back(std::move(t));
    }
    raw_.build(added_, false);
    normalized_.build(added_, true);
  }

  // [token, id] as BertProcessing / RobertaProcessing write them.
  FramePart special_pair(const json& p, const char* key, const std::string& where, int32_t type) {
    const json& v = hf::member(p, key, where);
    SIEVE_THROW_IF_NOT(v.is_array() && v.size() == 2 && v[0].is_string() &&
                           v[1].is_number_unsigned(),
                       where << "." << key << ": expected [token, id]");
    return FramePart{-1, {int32_t(v[1].get<uint32_t>())}, {v[0].get<std::string>()}, type};
  }

  std::vector<FramePart> read_template(const json& t, const json& specials, const std::string& where) {
    SIEVE_THROW_IF_NOT(t.is_array(), where << ": expected an array");
    std::vector<FramePart> parts;
    for (size_t i = 0; i < t.size(); ++i) {
      std::string at = where + "[" + std::to_string(i) + "]";
      const json& x = t[i];
      SIEVE_THROW_IF_NOT(x.is_object() && x.size() == 1,
                         at << ": expected {\"SpecialToken\": ...} or {\"Sequence\": ...}");
      FramePart part;
      if (x.contains("Sequence")) {
        const json& s = x["Sequence"];
        std::string id = hf::get_string(s, "id", "A", at + ".Sequence");
        SIEVE_THROW_IF_NOT(id == "A" || id == "B", at << ".Sequence.id: expected \"A\" or \"B\"");
        part.sequence = id == "A" ? 0 : 1;
        part.type_id = static_cast<int>(hf::get_int(s, "type_id", 0, 0, 255, at + ".Sequence"));
      } else if (x.contains("SpecialToken")) {
        const json& s = x["SpecialToken"];
        std::string id = hf::get_string(s, "id", "", at + ".SpecialToken");
        part.type_id = static_cast<int>(hf::get_int(s, "type_id", 0, 0, 255, at + ".SpecialToken"));
        SIEVE_THROW_IF_NOT(specials.is_object() && specials.contains(id),
                           at << ": special token '" << id
                              << "' is missing from the post-processor's special_tokens");
        const json& sp = specials[id];
        std::string sw = "special_tokens." + id;
        const json& ids = hf::member(sp, "ids", sw);
        const json& toks = hf::member(sp, "tokens", sw);
        SIEVE_THROW_IF_NOT(ids.is_array() && toks.is_array() && ids.size() == toks.size(),
                           sw << ": expected 'ids' and 'tokens' arrays of equal length");
        for (size_t k = 0; k < ids.size(); ++k) {
          SIEVE_THROW_IF_NOT(ids[k].is_number_unsigned() && toks[k].is_string(),
                             sw << ": bad entry " << k);
          part.ids.push_back(int32_t(ids[k].get<uint32_t>()));
          part.tokens.push_back(toks[k].get<std::string>());
        }
      } else {
        SIEVE_THROW(at << ": expected {\"SpecialToken\": ...} or {\"Sequence\": ...}");
      }
      parts.push_back(std::move(part));
    }
    return parts;
  }

  void read_post_processor(const json& p, const std::string& where) {
    const std::string type = hf::type_of(p, where);
    const FramePart a{0, {}, {}, 0};
    if (type == "TemplateProcessing") {
      const json specials = p.value("special_tokens", json::object());
      framing_->single = read_template(hf::member(p, "single", where), specials, where + ".single");
      framing_->pair = read_template(hf::member(p, "pair", where), specials, where + ".pair");
      has_template_ = true;
    } else if (type == "BertProcessing") {
      FramePart cls = special_pair(p, "cls", where, 0), sep = special_pair(p, "sep", where, 0);
      FramePart sep1 = sep;
      sep1.type_id = 1;
      framing_->single = {cls, a, sep};
      framing_->pair = {cls, a, sep, FramePart{1, {}, {}, 1}, sep1};
      has_template_ = true;
    } else if (type == "RobertaProcessing") {
      FramePart cls = special_pair(p, "cls", where, 0), sep = special_pair(p, "sep", where, 0);
      // RoBERTa has no token types: the second text and its separators keep type 0.
      framing_->single = {cls, a, sep};
      framing_->pair = {cls, a, sep, sep, FramePart{1, {}, {}, 0}, sep};
      has_template_ = true;
      if (hf::get_bool(p, "trim_offsets", true, where)) {
        trim_offsets_ = true;
        trim_add_prefix_space_ = hf::get_bool(p, "add_prefix_space", true, where);
      }
    } else if (type == "ByteLevel") {
      if (!has_template_) {
        framing_->single = {a};
        framing_->pair = {a, FramePart{1, {}, {}, 1}};
      }
      if (hf::get_bool(p, "trim_offsets", true, where)) {
        trim_offsets_ = true;
        trim_add_prefix_space_ = hf::get_bool(p, "add_prefix_space", true, where);
      }
    } else if (type == "Sequence") {
      const json& list = hf::member(p, "processors", where);
      SIEVE_THROW_IF_NOT(list.is_array(), where << ".processors: expected an array");
      framing_->single = {a};
      framing_->pair = {a, FramePart{1, {}, {}, 1}};
      for (size_t i = 0; i < list.size(); ++i)
        read_post_processor(list[i], where + ".processors[" + std::to_string(i) + "]");
    } else {
      SIEVE_THROW(where << ": unknown type '" << type
                        << "' (supported post-processors: TemplateProcessing, BertProcessing, "
                           "RobertaProcessing, ByteLevel, Sequence)");
    }
  }

  // Ids for SpecialTokens: the framing's first/last specials, the padding token, well-known names.
  void find_special_tokens(const json& j) {
    auto lookup = [&](std::initializer_list<const char*> names) -> int32_t {
      for (const char* n : names) {
        auto it = added_by_content_.find(n);
        if (it != added_by_content_.end()) return it->second;
        int32_t id = model_->find(n);
        if (id >= 0) return id;
      }
      return -1;
    };
    special_.unk = model_->unk_id();
    if (special_.unk < 0) special_.unk = lookup({"[UNK]", "<unk>", "<|endoftext|>"});
    special_.cls = lookup({"[CLS]", "<s>", "<|begin_of_text|>"});
    special_.sep = lookup({"[SEP]", "</s>", "<|end_of_text|>"});
    for (const FramePart& p : framing_->single) {
      if (p.sequence >= 0 || p.ids.empty()) continue;
      if (p.sequence < 0 && &p == &framing_->single.front()) special_.cls = p.ids.front();
      if (&p == &framing_->single.back()) special_.sep = p.ids.back();
    }
    special_.mask = lookup({"[MASK]", "<mask>"});
    special_.pad = lookup({"[PAD]", "<pad>"});
    if (j.contains("padding") && j["padding"].is_object()) {
      const json& pd = j["padding"];
      if (pd.contains("pad_id") && pd["pad_id"].is_number_unsigned())
        special_.pad = int32_t(pd["pad_id"].get<uint32_t>());
    }
    if (special_.pad < 0) special_.pad = lookup({"<|endoftext|>", "<|pad|>"});
  }

  std::unique_ptr<hf::Model> model_;
  std::unique_ptr<hf::Normalizer> normalizer_;
  std::unique_ptr<hf::PreTokenizer> pre_;
  std::vector<AddedToken> added_;
  AddedMatcher raw_, normalized_;
  std::unordered_map<std::string, int32_t> added_by_content_;
  std::unordered_map<int32_t, std::string> added_by_id_;
  std::unique_ptr<Framing> framing_;
  bool has_template_ = false;
  bool trim_offsets_ = false, trim_add_prefix_space_ = false;
  SpecialTokens special_;
  size_t max_length_ = 0;
  bool splits_at_spaces_ = false;
};

}  // namespace

std::unique_ptr<Tokenizer> hf::make_tokenizer(const json& j, const TokenizerJsonOptions& opt,
                                              const std::string& name) {
  try {
    return std::make_unique<HfTokenizer>(j, opt, name);
  } catch (const Error& ex) {
    throw Error(name + ": " + ex.what());
  }
}

std::unique_ptr<Tokenizer> parse_tokenizer_json(std::string_view text,
                                                const TokenizerJsonOptions& opt,
                                                const std::string& name) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& ex) {
    SIEVE_THROW("cannot parse JSON '" << name << "': " << ex.what());
  }
  return hf::make_tokenizer(j, opt, name);
}

std::unique_ptr<Tokenizer> load_tokenizer_json(const std::string& path,
                                               const TokenizerJsonOptions& opt) {
  return parse_tokenizer_json(read_file(path), opt, path);
}

}  // namespace sieve
