// The framing shared by every Tokenizer ([CLS] a [SEP] b [SEP], truncation, padding) and the
// loader that picks a tokenizer from a Hugging Face model directory.
#include "sieve/tokenizer.h"

#include <dirent.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <nlohmann/json.hpp>

#include "core/file_util.h"
#include "core/log.h"
#include "sieve/error.h"
#include "text/hf_tokenizer.h"

namespace sieve {

namespace {

using json = nlohmann::json;

size_t effective_max_length(const Tokenizer& tok, const EncodeOptions& opt) {
  return opt.max_length ? opt.max_length : tok.model_max_length();
}

void reserve_all(Encoding& e, size_t total) {
  e.ids.reserve(total);
  e.type_ids.reserve(total);
  e.attention_mask.reserve(total);
  e.tokens.reserve(total);
  e.offsets.reserve(total);
}

void push_special(Encoding& e, const Tokenizer& tok, int32_t id, int32_t type_id) {
  e.ids.push_back(id);
  e.type_ids.push_back(type_id);
  e.attention_mask.push_back(1);
  e.tokens.push_back(tok.id_to_token(id));
  e.offsets.push_back({0, 0});
}

void push_pieces(Encoding& e, const std::vector<TokenPiece>& pieces, size_t count,
                 int32_t type_id) {
  for (size_t i = 0; i < count; ++i) {
    e.ids.push_back(pieces[i].id);
    e.type_ids.push_back(type_id);
    e.attention_mask.push_back(1);
    e.tokens.push_back(pieces[i].token);
    e.offsets.push_back({pieces[i].begin, pieces[i].end});
  }
}

void require_framing_specials(const SpecialTokens& sp) {
  SIEVE_THROW_IF_NOT(sp.cls >= 0 && sp.sep >= 0,
                     "the vocabulary lacks [CLS]/[SEP] (or <s>/</s>); encode with "
                     "add_special_tokens = false");
}

// Number of special tokens a framing template adds.
size_t template_specials(const std::vector<FramePart>& parts) {
  size_t n = 0;
  for (const FramePart& p : parts)
    if (p.sequence < 0) n += p.ids.size();
  return n;
}

// Emits a framing template with the (already truncated) pieces of each text.
void emit_template(Encoding& e, const std::vector<FramePart>& parts, bool add_special,
                   const std::vector<TokenPiece>* texts[2], const size_t counts[2]) {
  for (const FramePart& p : parts) {
    if (p.sequence < 0) {
      if (!add_special) continue;
      for (size_t i = 0; i < p.ids.size(); ++i) {
        e.ids.push_back(p.ids[i]);
        e.type_ids.push_back(p.type_id);
        e.attention_mask.push_back(1);
        e.tokens.push_back(i < p.tokens.size() ? p.tokens[i] : std::string());
        e.offsets.push_back({0, 0});
      }
    } else if (p.sequence <= 1 && texts[p.sequence]) {
      push_pieces(e, *texts[p.sequence], counts[p.sequence], p.type_id);
    }
  }
}

}  // namespace

std::vector<TokenPiece> tokenize_prefix(const Tokenizer& tokenizer, std::string_view text, size_t n) {
  auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; };
  // Most pieces cover a few bytes, so a prefix of 8 bytes a piece usually holds n; each try
  // doubles, so the bytes tokenized stay under three times the text's.
  size_t want = n < text.size() / 8 ? std::max<size_t>(1024, 8 * (n + 1)) : text.size();
  while (tokenizer.splits_at_spaces() && want < text.size()) {
    size_t cut = want;  // the first space after a byte that is not blank, from `want` on
    while (cut < text.size() && !(text[cut] == ' ' && !blank(text[cut - 1]))) ++cut;
    if (cut >= text.size()) break;
    std::vector<TokenPiece> pieces = tokenizer.tokenize(text.substr(0, cut));
    if (pieces.size() > n) {
      pieces.resize(n);
      return pieces;
    }
    want = 2 * cut;
  }
  std::vector<TokenPiece> pieces = tokenizer.tokenize(text);
  if (pieces.size() > n) pieces.resize(n);
  return pieces;
}

Encoding Tokenizer::encode(std::string_view text, const EncodeOptions& opt) const {
  const Framing* fr = framing();
  const size_t max_len = effective_max_length(*this, opt);
  const size_t n_special = opt.add_special_tokens ? (fr ? template_specials(fr->single) : 2) : 0;
  SIEVE_THROW_IF_NOT(max_len >= std::max<size_t>(n_special, 1),
                     "max_length " << max_len << " is too small to hold the special tokens; "
                                   "use at least " << std::max<size_t>(n_special, 1));
  SpecialTokens sp = fr ? SpecialTokens{} : special_tokens();
  if (opt.add_special_tokens && !fr) require_framing_specials(sp);
  // One piece past what fits tells whether the text was cut.
  std::vector<TokenPiece> pieces = tokenize_prefix(*this, text, max_len - n_special + 1);
  Encoding e;
  size_t keep = pieces.size();
  if (keep > max_len - n_special) {
    keep = max_len - n_special;
    e.truncated = true;
  }
  reserve_all(e, keep + n_special);
  if (fr) {
    const std::vector<TokenPiece>* texts[2] = {&pieces, nullptr};
    const size_t counts[2] = {keep, 0};
    emit_template(e, fr->single, opt.add_special_tokens, texts, counts);
    return e;
  }
  if (opt.add_special_tokens) push_special(e, *this, sp.cls, 0);
  push_pieces(e, pieces, keep, 0);
  if (opt.add_special_tokens) push_special(e, *this, sp.sep, 0);
  return e;
}

Encoding Tokenizer::encode_pair(std::string_view a, std::string_view b,
                                const EncodeOptions& opt) const {
  const Framing* fr = framing();
  const size_t max_len = effective_max_length(*this, opt);
  const size_t n_special =
      opt.add_special_tokens ? (fr ? template_specials(fr->pair) : 3) : 0;
  SIEVE_THROW_IF_NOT(max_len >= std::max<size_t>(n_special, 1),
                     "max_length " << max_len << " is too small to frame a pair; use at least "
                                   << std::max<size_t>(n_special, 1));
  SpecialTokens sp = fr ? SpecialTokens{} : special_tokens();
  if (opt.add_special_tokens && !fr) require_framing_specials(sp);
  std::vector<TokenPiece> pa = tokenize(a);
  std::vector<TokenPiece> pb = tokenize(b);
  size_t n1 = pa.size(), n2 = pb.size();
  const size_t budget = max_len - n_special;
  Encoding e;
  if (n1 + n2 > budget) {
    // Hugging Face tokenizers' LongestFirst (truncate_encodings): give the shorter side up to
    // half the budget and the longer the rest; when both exceed half, the longer side gets the
    // odd token (the second on ties).
    e.truncated = true;
    bool swap = n1 > n2;
    size_t s = swap ? n2 : n1, l = swap ? n1 : n2;
    l = s > budget ? s : std::max(s, budget - s);
    if (s + l > budget) {
      s = budget / 2;
      l = s + budget % 2;
    }
    n1 = std::min(n1, swap ? l : s);
    n2 = std::min(n2, swap ? s : l);
  }
  const size_t total = n1 + n2 + n_special;
  reserve_all(e, total);
  if (fr) {
    const std::vector<TokenPiece>* texts[2] = {&pa, &pb};
    const size_t counts[2] = {n1, n2};
    emit_template(e, fr->pair, opt.add_special_tokens, texts, counts);
    return e;
  }
  if (opt.add_special_tokens) push_special(e, *this, sp.cls, 0);
  push_pieces(e, pa, n1, 0);
  if (opt.add_special_tokens) push_special(e, *this, sp.sep, 0);
  push_pieces(e, pb, n2, 1);
  if (opt.add_special_tokens) push_special(e, *this, sp.sep, 1);
  return e;
}

Batch Tokenizer::encode_batch(const std::vector<std::string>& texts,
                              const EncodeOptions& opt) const {
  Batch batch;
  batch.items.reserve(texts.size());
  for (const std::string& t : texts) {
    batch.items.push_back(encode(t, opt));
    batch.seq_len = std::max(batch.seq_len, batch.items.back().ids.size());
  }
  bool needs_pad = std::any_of(batch.items.begin(), batch.items.end(),
                               [&](const Encoding& e) { return e.ids.size() < batch.seq_len; });
  if (!needs_pad) return batch;
  const int32_t pad = special_tokens().pad;
  SIEVE_THROW_IF_NOT(pad >= 0, "cannot pad the batch: the vocabulary has no [PAD] token");
  const std::string pad_token = id_to_token(pad);
  for (Encoding& e : batch.items) {
    const size_t n = batch.seq_len - e.ids.size();
    e.ids.insert(e.ids.end(), n, pad);
    e.type_ids.insert(e.type_ids.end(), n, 0);
    e.attention_mask.insert(e.attention_mask.end(), n, 0);
    e.tokens.insert(e.tokens.end(), n, pad_token);
    e.offsets.insert(e.offsets.end(), n, {0, 0});
  }
  return batch;
}

// ---------------------------------------------------------------------------------------------
// Loading from a model directory.

namespace {

constexpr size_t kDefaultMaxLength = 512;
// Hugging Face writes int(1e30) when a model declares no limit; anything this large is "unset".
constexpr double kMaxPlausibleLength = 1 << 24;

json read_json(const std::string& path) {
  std::string text = read_file(path);
  try {
    return json::parse(text);
  } catch (const json::exception& ex) {
    SIEVE_THROW("cannot parse JSON '" << path << "': " << ex.what());
  }
}

// A positive length that is plausible as a sequence limit, or 0.
size_t plausible_length(const json& v) {
  if (!v.is_number()) return 0;
  double d = v.get<double>();
  if (!std::isfinite(d) || d < 1 || d > kMaxPlausibleLength) return 0;
  return size_t(d);
}

// Settings gathered from tokenizer_config.json and sentence_bert_config.json.
struct DirConfig {
  bool has_lower = false, lower = true;
  bool has_strip = false, strip = true;
  bool has_chinese = false, chinese = true;
  size_t max_length = 0;   // from tokenizer_config, 0 when absent/absurd
  size_t sbert_max = 0;    // sentence-transformers max_seq_length, 0 when absent
  bool sbert_lower = false;
};

DirConfig read_dir_config(const std::string& dir) {
  DirConfig c;
  std::string tc = path_join(dir, "tokenizer_config.json");
  if (is_file(tc)) {
    json j = read_json(tc);
    if (j.is_object()) {
      if (j.contains("do_lower_case") && j["do_lower_case"].is_boolean()) {
        c.has_lower = true;
        c.lower = j["do_lower_case"].get<bool>();
      }
      if (j.contains("strip_accents") && j["strip_accents"].is_boolean()) {
        c.has_strip = true;
        c.strip = j["strip_accents"].get<bool>();
      }
      if (j.contains("tokenize_chinese_chars") && j["tokenize_chinese_chars"].is_boolean()) {
        c.has_chinese = true;
        c.chinese = j["tokenize_chinese_chars"].get<bool>();
      }
      if (j.contains("model_max_length")) c.max_length = plausible_length(j["model_max_length"]);
    }
  }
  std::string sb = path_join(dir, "sentence_bert_config.json");
  if (is_file(sb)) {
    json j = read_json(sb);
    if (j.is_object()) {
      if (j.contains("max_seq_length")) c.sbert_max = plausible_length(j["max_seq_length"]);
      if (j.contains("do_lower_case") && j["do_lower_case"].is_boolean())
        c.sbert_lower = j["do_lower_case"].get<bool>();
    }
  }
  return c;
}

size_t resolve_max_length(const DirConfig& c) {
  if (c.sbert_max && c.max_length) return std::min(c.sbert_max, c.max_length);
  if (c.sbert_max) return c.sbert_max;  // sentence-transformers truncates to it regardless
  if (c.max_length) return c.max_length;
  return kDefaultMaxLength;
}

// Applies the directory's config on top of what tokenizer.json (or the defaults) said.
void apply_config(const DirConfig& c, WordPieceOptions& o) {
  if (c.has_lower) o.do_lower_case = c.lower;
  if (c.has_strip) {
    o.strip_accents_set = true;
    o.strip_accents = c.strip;
  }
  if (c.has_chinese) o.tokenize_chinese_chars = c.chinese;
  if (c.sbert_lower && !o.do_lower_case) {
    // sentence-transformers lower-cases with str.lower() before tokenizing, without touching
    // accents, so keep the accent setting the tokenizer had.
    bool strip = o.strip_accents_set ? o.strip_accents : o.do_lower_case;
    o.do_lower_case = true;
    o.strip_accents_set = true;
    o.strip_accents = strip;
  }
  o.model_max_length = resolve_max_length(c);
}

// Reads the BertNormalizer settings of a tokenizer.json normalizer (possibly inside a Sequence).
void read_normalizer(const json& n, WordPieceOptions& o) {
  if (!n.is_object() || !n.contains("type") || !n["type"].is_string()) return;
  const std::string type = n["type"].get<std::string>();
  if (type == "BertNormalizer") {
    if (n.contains("lowercase") && n["lowercase"].is_boolean())
      o.do_lower_case = n["lowercase"].get<bool>();
    if (n.contains("strip_accents") && n["strip_accents"].is_boolean()) {
      o.strip_accents_set = true;
      o.strip_accents = n["strip_accents"].get<bool>();
    }
    if (n.contains("handle_chinese_chars") && n["handle_chinese_chars"].is_boolean())
      o.tokenize_chinese_chars = n["handle_chinese_chars"].get<bool>();
  } else if (type == "Lowercase") {
    o.do_lower_case = true;
  } else if (type == "StripAccents") {
    o.strip_accents_set = true;
    o.strip_accents = true;
  } else if (type == "Sequence" && n.contains("normalizers") && n["normalizers"].is_array()) {
    for (const json& sub : n["normalizers"]) read_normalizer(sub, o);
  }
}

bool is_wordpiece_json(const json& j) {
  if (!j.is_object() || !j.contains("model") || !j["model"].is_object()) return false;
  const json& m = j["model"];
  return m.contains("type") && m["type"].is_string() && m["type"].get<std::string>() == "WordPiece";
}

// True when tokenizer.json frames a text as BERT does, [CLS] ... [SEP] (or names no framing):
// what sieve's WordPiece tokenizer does. MPNet's WordPiece vocabulary comes with RoBERTa's
// framing instead (RobertaProcessing: <s> ... </s>), which only the full tokenizer.json reader has.
bool bert_framed(const json& j) {
  if (!j.contains("post_processor") || j["post_processor"].is_null()) return true;
  const json& p = j["post_processor"];
  if (!p.is_object()) return true;  // the full reader reports it
  const auto t = p.find("type");
  const std::string type = t != p.end() && t->is_string() ? t->get<std::string>() : "";
  auto bert_token = [](const json& pair) {  // ["[CLS]", 101] as BertProcessing writes it
    return pair.is_array() && !pair.empty() && pair[0].is_string() &&
           (pair[0].get<std::string>() == "[CLS]" || pair[0].get<std::string>() == "[SEP]");
  };
  if (type == "BertProcessing") return bert_token(p.value("cls", json())) && bert_token(p.value("sep", json()));
  if (type == "TemplateProcessing") {
    if (!p.contains("special_tokens") || !p["special_tokens"].is_object()) return true;
    for (auto it = p["special_tokens"].begin(); it != p["special_tokens"].end(); ++it)
      if (it.key() != "[CLS]" && it.key() != "[SEP]") return false;
    return true;
  }
  return false;  // RobertaProcessing, Sequence, ...: the full reader
}

// Builds a WordPiece tokenizer from tokenizer.json, or returns null when its model is not
// WordPiece or it frames texts otherwise than BERT (the caller then tries the other files).
std::unique_ptr<Tokenizer> from_tokenizer_json(const json& j, const std::string& path, const DirConfig& c) {
  if (!is_wordpiece_json(j) || !bert_framed(j)) return nullptr;  // the caller uses load_tokenizer_json
  const json& m = j["model"];
  SIEVE_THROW_IF_NOT(m.contains("vocab") && m["vocab"].is_object(),
                     "'" << path << "' has a WordPiece model without a vocab object");
  const json& v = m["vocab"];
  SIEVE_THROW_IF_NOT(!v.empty(), "'" << path << "' has an empty WordPiece vocab");
  std::vector<std::string> vocab(v.size());
  std::vector<bool> filled(v.size(), false);
  for (auto it = v.begin(); it != v.end(); ++it) {
    SIEVE_THROW_IF_NOT(it.value().is_number_integer(),
                       "'" << path << "': vocab id of '" << it.key() << "' is not an integer");
    int64_t id = it.value().get<int64_t>();
    SIEVE_THROW_IF_NOT(id >= 0 && size_t(id) < vocab.size() && !filled[size_t(id)],
                       "'" << path << "': vocab ids must be 0.." << vocab.size() - 1
                           << " without gaps or repeats (bad id " << id << ")");
    vocab[size_t(id)] = it.key();
    filled[size_t(id)] = true;
  }
  WordPieceOptions o;
  if (m.contains("unk_token") && m["unk_token"].is_string())
    o.unk_token = m["unk_token"].get<std::string>();
  if (m.contains("continuing_subword_prefix") && m["continuing_subword_prefix"].is_string())
    o.continuing_prefix = m["continuing_subword_prefix"].get<std::string>();
  if (m.contains("max_input_chars_per_word") && m["max_input_chars_per_word"].is_number_unsigned())
    o.max_input_chars_per_word = m["max_input_chars_per_word"].get<size_t>();
  if (j.contains("normalizer")) {
    if (j["normalizer"].is_null()) o.do_lower_case = false;  // no normalizer: text used as is
    else read_normalizer(j["normalizer"], o);
  }
  apply_config(c, o);
  return make_wordpiece_tokenizer(std::move(vocab), o);
}

// True when a tokenizer.json normalizer (possibly inside a Sequence) is SentencePiece's
// non-empty Precompiled character map.
bool uses_precompiled(const json& j) {
  if (!j.is_object()) return false;
  std::function<bool(const json&)> walk = [&](const json& n) {
    if (!n.is_object()) return false;
    const auto t = n.find("type");  // (not n.value(): that throws nlohmann's error on a non-string)
    const std::string type = t != n.end() && t->is_string() ? t->get<std::string>() : "";
    if (type == "Precompiled") {
      auto it = n.find("precompiled_charsmap");
      return it != n.end() && it->is_string() && !it->get_ref<const std::string&>().empty();
    }
    if (type == "Sequence" && n.contains("normalizers") && n["normalizers"].is_array())
      for (const json& sub : n["normalizers"])
        if (walk(sub)) return true;
    return false;
  };
  return j.contains("normalizer") && walk(j["normalizer"]);
}

// The SentencePiece model file of a directory: the names Hugging Face uses first, then any
// *.model (alphabetically, for a deterministic choice).
std::string find_sentencepiece_model(const std::string& dir) {
  for (const char* name : {"spiece.model", "sentencepiece.bpe.model", "tokenizer.model"}) {
    std::string p = path_join(dir, name);
    if (is_file(p)) return p;
  }
  std::vector<std::string> found;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (dirent* ent = ::readdir(d)) {
      std::string name = ent->d_name;
      if (name.size() > 6 && name.compare(name.size() - 6, 6, ".model") == 0 &&
          is_file(path_join(dir, name)))
        found.push_back(name);
    }
    ::closedir(d);
  }
  if (found.empty()) return "";
  std::sort(found.begin(), found.end());
  return path_join(dir, found.front());
}

}  // namespace

std::unique_ptr<Tokenizer> Tokenizer::from_model_dir(const std::string& dir) {
  SIEVE_THROW_IF_NOT(is_dir(dir), "model directory not found: '" << dir << "'");
  DirConfig c = read_dir_config(dir);

  std::string tj = path_join(dir, "tokenizer.json");
  std::string vt = path_join(dir, "vocab.txt");
  if (is_file(tj)) {
    // WordPiece models keep the WordPiece tokenizer (and its tokenizer_config overrides). Other
    // models go through the tokenizer.json reader, except that a folder with a vocab.txt keeps
    // using it (as sieve always did), and a SentencePiece Precompiled normalizer, which the
    // reader refuses, yields to the folder's SentencePiece model.
    const json j = read_json(tj);
    if (auto tok = from_tokenizer_json(j, tj, c)) return tok;
    std::string sp = find_sentencepiece_model(dir);
    // (a WordPiece tokenizer.json with its own framing, MPNet's, is read whole, never vocab.txt)
    if (is_file(vt) && !is_wordpiece_json(j)) {
      log_debug("tokenizer.json is not WordPiece and the folder has vocab.txt; using vocab.txt");
      WordPieceOptions o;
      apply_config(c, o);
      return make_wordpiece_tokenizer(read_vocab_txt(vt), o);
    }
    if (!sp.empty() && uses_precompiled(j)) {
      log_debug("tokenizer.json uses a Precompiled normalizer; reading '" + sp + "' instead");
      return make_sentencepiece_tokenizer(sp, resolve_max_length(c));
    }
    TokenizerJsonOptions o;
    if (c.sbert_max || c.max_length) o.model_max_length = resolve_max_length(c);
    return hf::make_tokenizer(j, o, tj);
  }
  if (is_file(vt)) {
    WordPieceOptions o;
    apply_config(c, o);
    return make_wordpiece_tokenizer(read_vocab_txt(vt), o);
  }
  std::string sp = find_sentencepiece_model(dir);
  if (!sp.empty()) return make_sentencepiece_tokenizer(sp, resolve_max_length(c));
  SIEVE_THROW("no usable tokenizer in '" << dir
                                         << "': expected tokenizer.json, vocab.txt, or a "
                                            "SentencePiece *.model file");
}

}  // namespace sieve
