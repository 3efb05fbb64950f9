// tokenizer.json models: BPE (merge ranks, byte fallback, prefixes and suffixes), Unigram (Viterbi
// over piece scores), WordPiece (greedy longest match) and WordLevel (whole-split lookup).
#include <algorithm>
#include <cstdio>
#include <limits>
#include <queue>

#include "sieve/error.h"
#include "text/hf_tokenizer.h"

namespace sieve::hf {

namespace {

// A vocabulary: id -> string and string -> id (ids may have gaps).
class Vocab {
 public:
  void add(const std::string& token, int64_t id, const std::string& where) {
    SIEVE_THROW_IF_NOT(id >= 0 && id < (int64_t(1) << 31),
                       where << ": id " << id << " of '" << token << "' is out of range");
    if (size_t(id) >= tokens_.size()) {
      tokens_.resize(size_t(id) + 1);
      present_.resize(size_t(id) + 1, false);
    }
    SIEVE_THROW_IF_NOT(!present_[size_t(id)], where << ": id " << id << " is used twice ('"
                                                    << tokens_[size_t(id)] << "' and '" << token
                                                    << "')");
    tokens_[size_t(id)] = token;
    present_[size_t(id)] = true;
  }
  // Builds the lookup; call once after the last add().
  void seal() {
    index_.reserve(tokens_.size());
    for (size_t i = 0; i < tokens_.size(); ++i)
      if (present_[i]) index_.emplace(std::string_view(tokens_[i]), int32_t(i));
  }
  int32_t find(std::string_view t) const {
    auto it = index_.find(t);
    return it == index_.end() ? -1 : it->second;
  }
  const std::string* token_of(int32_t id) const {
    if (id < 0 || size_t(id) >= tokens_.size() || !present_[size_t(id)]) return nullptr;
    return &tokens_[size_t(id)];
  }
  size_t size() const { return tokens_.size(); }
  // Byte fallback: the ids of <0xHH> for every byte of `s`, or false when one is missing.
  bool byte_ids(std::string_view s, std::vector<int32_t>& ids) const {
    ids.clear();
    char buf[8];
    for (unsigned char byte : s) {
      std::snprintf(buf, sizeof buf, "<0x%02X>", byte);
      int32_t bid = find(buf);
      if (bid < 0) return false;
      ids.push_back(bid);
    }
    return true;
  }

 private:
  std::vector<std::string> tokens_;
  std::vector<bool> present_;
  std::unordered_map<std::string_view, int32_t> index_;
};

Vocab read_vocab_object(const json& m, const std::string& where) {
  const json& v = member(m, "vocab", where);
  SIEVE_THROW_IF_NOT(v.is_object(), where << ".vocab: expected an object {token: id}");
  Vocab vocab;
  // Ids index a table, so one id far past the vocabulary's size would allocate that many slots
  // (found by fuzzing: 55,555,555 in a 3-entry vocabulary). Real files number their tokens
  // 0..n-1; a gap of up to 65,536 ids is tolerated.
  const int64_t limit = static_cast<int64_t>(v.size()) + 65536;
  for (auto it = v.begin(); it != v.end(); ++it) {
    SIEVE_THROW_IF_NOT(it.value().is_number_integer(),
                       where << ".vocab: id of '" << it.key() << "' is not an integer");
    const int64_t id = it.value().get<int64_t>();
    SIEVE_THROW_IF_NOT(id < limit, where << ".vocab: id " << id << " of '" << it.key() << "' is far past the "
                                         << v.size() << " entries of the vocabulary (ids run 0.." << v.size() - 1
                                         << ")");
    vocab.add(it.key(), id, where + ".vocab");
  }
  vocab.seal();
  return vocab;
}

// --- BPE ---------------------------------------------------------------------------------------

class Bpe final : public Model {
 public:
  Bpe(const json& m, const std::string& where) {
    auto dropout = m.find("dropout");
    if (dropout != m.end() && !dropout->is_null()) {
      SIEVE_THROW_IF_NOT(dropout->is_number() && dropout->get<double>() == 0.0,
                         where << ".dropout: BPE dropout is random and not supported; set it to "
                                  "null or 0");
    }
    vocab_ = read_vocab_object(m, where);
    bool has;
    unk_token_ = get_opt_string(m, "unk_token", has_unk_, where);
    prefix_ = get_opt_string(m, "continuing_subword_prefix", has, where);
    suffix_ = get_opt_string(m, "end_of_word_suffix", has, where);
    fuse_unk_ = get_bool(m, "fuse_unk", false, where);
    byte_fallback_ = get_bool(m, "byte_fallback", false, where);
    ignore_merges_ = get_bool(m, "ignore_merges", false, where);
    const json& merges = member(m, "merges", where);
    SIEVE_THROW_IF_NOT(merges.is_array(), where << ".merges: expected an array");
    merges_.reserve(merges.size());
    for (size_t i = 0; i < merges.size(); ++i) {
      const json& x = merges[i];
      std::string at = where + ".merges[" + std::to_string(i) + "]";
      std::string a, b;
      if (x.is_string()) {
        const std::string& s = x.get_ref<const std::string&>();
        size_t sp = s.find(' ');
        SIEVE_THROW_IF_NOT(sp != std::string::npos,
                           at << ": expected \"left right\", got '" << s << "'");
        a = s.substr(0, sp);
        b = s.substr(sp + 1);
      } else if (x.is_array() && x.size() == 2 && x[0].is_string() && x[1].is_string()) {
        a = x[0].get<std::string>();
        b = x[1].get<std::string>();
      } else {
        SIEVE_THROW(at << ": expected \"left right\" or [left, right]");
      }
      int32_t ia = vocab_.find(a), ib = vocab_.find(b);
      SIEVE_THROW_IF_NOT(ia >= 0, at << ": merge token '" << a << "' is not in the vocab");
      SIEVE_THROW_IF_NOT(ib >= 0, at << ": merge token '" << b << "' is not in the vocab");
      std::string merged = a + (b.size() >= prefix_.size() ? b.substr(prefix_.size()) : "");
      int32_t im = vocab_.find(merged);
      SIEVE_THROW_IF_NOT(im >= 0, at << ": merged token '" << merged << "' is not in the vocab");
      // Later duplicates win, as when tokenizers collects the merges into its map.
      merges_[key(ia, ib)] = {int32_t(i), im};
    }
  }

  void tokenize(const std::string& text, const std::vector<uint32_t>& starts,
                std::vector<ModelToken>& out) const override {
    const size_t n = starts.size() - 1;
    if (n == 0) return;
    if (ignore_merges_) {
      int32_t id = vocab_.find(text);
      if (id >= 0) {
        out.push_back({id, text, 0, n});
        return;
      }
    }
    struct Sym {
      int32_t id;
      size_t begin, end;  // characters
      long prev, next;
      bool alive;
    };
    std::vector<Sym> syms;
    syms.reserve(n);
    // A pending unknown run: id and character span.
    bool unk = false;
    int32_t unk_id = -1;
    size_t unk_b = 0, unk_e = 0;
    auto add = [&](int32_t id, size_t b, size_t e) {
      syms.push_back({id, b, e, long(syms.size()) - 1, long(syms.size()) + 1, true});
    };
    auto flush_unk = [&] {
      if (unk) add(unk_id, unk_b, unk_e);
      unk = false;
    };
    std::string s;
    for (size_t i = 0; i < n; ++i) {
      s.assign(text, starts[i], starts[i + 1] - starts[i]);
      if (i > 0) s.insert(0, prefix_);
      if (i + 1 == n) s += suffix_;
      int32_t id = vocab_.find(s);
      if (id >= 0) {
        flush_unk();
        add(id, i, i + 1);
        continue;
      }
      std::vector<int32_t> ids;
      if (byte_fallback_ && vocab_.byte_ids(s, ids)) {
        // tokenizers does not flush a pending unknown here; it lands after these bytes.
        for (int32_t bid : ids) add(bid, i, i + 1);
        continue;
      }
      if (!has_unk_) continue;  // without an unknown token the character is dropped
      int32_t uid = vocab_.find(unk_token_);
      SIEVE_THROW_IF_NOT(uid >= 0, "BPE: unk_token '" << unk_token_ << "' is not in the vocab");
      if (unk && fuse_unk_) {
        unk_e = i + 1;
      } else {
        flush_unk();
        unk = true;
        unk_id = uid;
        unk_b = i;
        unk_e = i + 1;
      }
    }
    flush_unk();
    if (syms.empty()) return;
    syms.back().next = -1;

    struct Merge {
      int32_t rank;
      size_t pos;
      int32_t new_id;
      bool operator<(const Merge& o) const {  // priority: lowest rank, then leftmost
        return rank != o.rank ? rank > o.rank : pos > o.pos;
      }
    };
    std::priority_queue<Merge> queue;
    for (size_t i = 0; i + 1 < syms.size(); ++i) {
      auto it = merges_.find(key(syms[i].id, syms[i + 1].id));
      if (it != merges_.end()) queue.push({it->second.first, i, it->second.second});
    }
    while (!queue.empty()) {
      Merge top = queue.top();
      queue.pop();
      Sym& cur = syms[top.pos];
      if (!cur.alive || cur.next < 0) continue;
      Sym& right = syms[size_t(cur.next)];
      auto it = merges_.find(key(cur.id, right.id));
      if (it == merges_.end() || it->second.second != top.new_id) continue;  // stale entry
      cur.id = top.new_id;
      cur.end = right.end;
      right.alive = false;
      cur.next = right.next;
      if (cur.next >= 0) syms[size_t(cur.next)].prev = long(top.pos);
      if (cur.prev >= 0) {
        auto p = merges_.find(key(syms[size_t(cur.prev)].id, cur.id));
        if (p != merges_.end()) queue.push({p->second.first, size_t(cur.prev), p->second.second});
      }
      if (cur.next >= 0) {
        auto q = merges_.find(key(cur.id, syms[size_t(cur.next)].id));
        if (q != merges_.end()) queue.push({q->second.first, top.pos, q->second.second});
      }
    }
    for (const Sym& x : syms) {
      if (!x.alive) continue;
      const std::string* t = vocab_.token_of(x.id);
      out.push_back({x.id, t ? *t : std::string(), x.begin, x.end});
    }
  }

  int32_t find(std::string_view t) const override { return vocab_.find(t); }
  const std::string* token_of(int32_t id) const override { return vocab_.token_of(id); }
  size_t size() const override { return vocab_.size(); }
  int32_t unk_id() const override { return has_unk_ ? vocab_.find(unk_token_) : -1; }

 private:
  static uint64_t key(int32_t a, int32_t b) { return (uint64_t(uint32_t(a)) << 32) | uint32_t(b); }

  Vocab vocab_;
  std::unordered_map<uint64_t, std::pair<int32_t, int32_t>> merges_;  // -> (rank, new id)
  bool has_unk_ = false;
  std::string unk_token_, prefix_, suffix_;
  bool fuse_unk_ = false, byte_fallback_ = false, ignore_merges_ = false;
};

// --- WordPiece ---------------------------------------------------------------------------------

// WordPiece and WordLevel: a vocabulary object and an unknown token.
class VocabModel : public Model {
 public:
  VocabModel(const json& m, const std::string& where, const char* default_unk)
      : vocab_(read_vocab_object(m, where)), unk_(get_string(m, "unk_token", default_unk, where)) {}
  int32_t find(std::string_view t) const override { return vocab_.find(t); }
  const std::string* token_of(int32_t id) const override { return vocab_.token_of(id); }
  size_t size() const override { return vocab_.size(); }
  int32_t unk_id() const override { return vocab_.find(unk_); }

 protected:
  Vocab vocab_;
  std::string unk_;
};

class WordPiece final : public VocabModel {
 public:
  WordPiece(const json& m, const std::string& where) : VocabModel(m, where, "[UNK]") {
    prefix_ = get_string(m, "continuing_subword_prefix", "##", where);
    auto it = m.find("max_input_chars_per_word");
    if (it != m.end() && !it->is_null()) {
      SIEVE_THROW_IF_NOT(it->is_number_unsigned(),
                         where << ".max_input_chars_per_word: expected a non-negative integer");
      max_chars_ = it->get<size_t>();
    }
  }
  void tokenize(const std::string& text, const std::vector<uint32_t>& starts,
                std::vector<ModelToken>& out) const override {
    const size_t n = starts.size() - 1;
    if (n == 0) return;
    auto unk = [&] {
      int32_t id = vocab_.find(unk_);
      SIEVE_THROW_IF_NOT(id >= 0, "WordPiece: unk_token '" << unk_ << "' is not in the vocab");
      out.push_back({id, unk_, 0, n});
    };
    if (n > max_chars_) return unk();
    const size_t first = out.size();
    size_t start = 0;
    std::string sub;
    while (start < n) {
      size_t end = n;
      int32_t found = -1;
      while (start < end) {
        sub.assign(start > 0 ? prefix_ : std::string());
        sub.append(text, starts[start], starts[end] - starts[start]);
        found = vocab_.find(sub);
        if (found >= 0) break;
        --end;
      }
      if (found < 0) {
        out.resize(first);
        return unk();
      }
      out.push_back({found, sub, start, end});
      start = end;
    }
  }

 private:
  std::string prefix_;
  size_t max_chars_ = 100;
};

// --- WordLevel ---------------------------------------------------------------------------------

class WordLevel final : public VocabModel {
 public:
  WordLevel(const json& m, const std::string& where) : VocabModel(m, where, "<unk>") {}
  void tokenize(const std::string& text, const std::vector<uint32_t>& starts,
                std::vector<ModelToken>& out) const override {
    const size_t n = starts.size() - 1;
    if (n == 0) return;
    int32_t id = vocab_.find(text);
    if (id >= 0) {
      out.push_back({id, text, 0, n});
      return;
    }
    int32_t u = vocab_.find(unk_);
    SIEVE_THROW_IF_NOT(u >= 0, "WordLevel: unk_token '" << unk_ << "' is not in the vocab");
    out.push_back({u, unk_, 0, n});
  }
};

// --- Unigram -----------------------------------------------------------------------------------

class Unigram final : public Model {
 public:
  Unigram(const json& m, const std::string& where) {
    const json& v = member(m, "vocab", where);
    SIEVE_THROW_IF_NOT(v.is_array(), where << ".vocab: expected an array of [piece, score]");
    scores_.reserve(v.size());
    double min_score = std::numeric_limits<double>::infinity();
    for (size_t i = 0; i < v.size(); ++i) {
      const json& e = v[i];
      SIEVE_THROW_IF_NOT(e.is_array() && e.size() == 2 && e[0].is_string() && e[1].is_number(),
                         where << ".vocab[" << i << "]: expected [piece, score]");
      std::string piece = e[0].get<std::string>();
      double score = e[1].get<double>();
      vocab_.add(piece, int64_t(i), where + ".vocab");
      scores_.push_back(score);
      max_len_ = std::max(max_len_, piece.size());
      min_score = std::min(min_score, score);
    }
    vocab_.seal();
    unk_score_ = min_score - 10.0;
    auto u = m.find("unk_id");
    if (u != m.end() && !u->is_null()) {
      SIEVE_THROW_IF_NOT(u->is_number_unsigned() && u->get<size_t>() < scores_.size(),
                         where << ".unk_id: expected an index into the vocab");
      unk_id_ = int32_t(u->get<size_t>());
    }
    byte_fallback_ = get_bool(m, "byte_fallback", false, where);
  }

  void tokenize(const std::string& text, const std::vector<uint32_t>& starts,
                std::vector<ModelToken>& out) const override {
    const size_t n = starts.size() - 1;
    if (n == 0) return;
    const size_t size = text.size();
    // Best path ending at each byte position (only character starts are reached).
    struct Node {
      int32_t id = -1;
      double score = 0;
      long from = -1;  // byte start of the last piece; -1 when unreached
    };
    std::vector<Node> best(size + 1);
    std::vector<long> char_of(size + 1, -1);
    for (size_t i = 0; i <= n; ++i) char_of[starts[i]] = long(i);
    for (size_t ci = 0; ci < n; ++ci) {
      const size_t at = starts[ci];
      const double here = best[at].score;
      const size_t mblen = starts[ci + 1] - at;
      bool single = false;
      for (size_t cj = ci + 1; cj <= n && starts[cj] - at <= max_len_; ++cj) {
        size_t key_pos = starts[cj];
        int32_t id = vocab_.find(std::string_view(text).substr(at, key_pos - at));
        if (id < 0) continue;
        double cand = scores_[size_t(id)] + here;
        Node& t = best[key_pos];
        if (t.from < 0 || cand > t.score) {
          t.score = cand;
          t.from = long(at);
          t.id = id;
        }
        if (key_pos - at == mblen) single = true;
      }
      if (!single) {
        SIEVE_THROW_IF_NOT(unk_id_ >= 0, "Unigram: the text has a character the vocab lacks and "
                                         "the model has no unk_id");
        Node& t = best[at + mblen];
        double cand = unk_score_ + here;
        if (t.from < 0 || cand > t.score) {
          t.score = cand;
          t.from = long(at);
          t.id = unk_id_;
        }
      }
    }
    // Walk back; consecutive unknown pieces fuse into one.
    struct Piece {
      size_t b, e;  // bytes
      bool unk;
    };
    std::vector<Piece> pieces;
    for (size_t end = size; end > 0;) {
      const Node& node = best[end];
      size_t from = size_t(node.from);
      bool is_unk = node.id == unk_id_;
      if (is_unk && !pieces.empty() && pieces.back().unk) pieces.back().b = from;
      else pieces.push_back({from, end, is_unk});
      end = from;
    }
    std::reverse(pieces.begin(), pieces.end());
    for (const Piece& p : pieces) {
      std::string s = text.substr(p.b, p.e - p.b);
      size_t cb = size_t(char_of[p.b]), ce = size_t(char_of[p.e]);
      int32_t id = vocab_.find(s);
      std::vector<int32_t> ids;
      if (id < 0 && byte_fallback_ && vocab_.byte_ids(s, ids)) {
        for (int32_t bid : ids) out.push_back({bid, *vocab_.token_of(bid), cb, ce});
        continue;
      }
      if (id < 0) id = unk_id_;
      out.push_back({id, s, cb, ce});
    }
  }
  int32_t find(std::string_view t) const override { return vocab_.find(t); }
  const std::string* token_of(int32_t id) const override { return vocab_.token_of(id); }
  size_t size() const override { return vocab_.size(); }
  int32_t unk_id() const override { return unk_id_; }

 private:
  Vocab vocab_;
  std::vector<double> scores_;
  size_t max_len_ = 0;
  double unk_score_ = 0;
  int32_t unk_id_ = -1;
  bool byte_fallback_ = false;
};

}  // namespace

std::unique_ptr<Model> make_model(const json& j, const std::string& where) {
  std::string type;
  if (j.is_object() && !j.contains("type")) {
    // Older files omit the model type; infer it from the fields as tokenizers does.
    if (j.contains("merges")) type = "BPE";
    else if (j.contains("vocab") && j["vocab"].is_array()) type = "Unigram";
    else if (j.contains("continuing_subword_prefix")) type = "WordPiece";
    else type = "WordLevel";
  } else {
    type = type_of(j, where);
  }
  if (type == "BPE") return std::make_unique<Bpe>(j, where);
  if (type == "WordPiece") return std::make_unique<WordPiece>(j, where);
  if (type == "WordLevel") return std::make_unique<WordLevel>(j, where);
  if (type == "Unigram") return std::make_unique<Unigram>(j, where);
  SIEVE_THROW(where << ": unknown type '" << type
                    << "' (supported models: BPE, Unigram, WordPiece, WordLevel)");
}

}  // namespace sieve::hf
