// The shard protocol's bodies (serve/shard_wire.h).
#include "serve/shard_wire.h"

#include <cstring>
#include <limits>

#include <nlohmann/json.hpp>

#include "sieve/error.h"

namespace sieve::serve::shard_wire {
namespace {

class Writer {
 public:
  Writer() { u32(kMagic); }
  void u32(uint32_t v) { raw(&v, 4); }
  void i32(int32_t v) { raw(&v, 4); }
  void f64(double v) { raw(&v, 8); }
  void u64(uint64_t v) { raw(&v, 8); }
  void str(const std::string& s) {
    u32(count(s.size()));
    out_ += s;
  }
  void floats(const float* p, size_t n) { raw(p, n * sizeof(float)); }
  void u32s(const std::vector<uint32_t>& v) {
    u32(count(v.size()));
    raw(v.data(), v.size() * 4);
  }
  std::string take() { return std::move(out_); }
  static uint32_t count(size_t n) {
    SIEVE_THROW_IF_NOT(n <= std::numeric_limits<uint32_t>::max(), "a shard message of more than 2^32 items");
    return static_cast<uint32_t>(n);
  }

 private:
  // (sieve runs on little-endian machines only: x86-64 and AArch64)
  void raw(const void* p, size_t n) { out_.append(static_cast<const char*>(p), n); }
  std::string out_;
};

class Reader {
 public:
  Reader(const std::string& body, const char* what) : s_(body), what_(what) {
    SIEVE_THROW_IF_NOT(u32() == kMagic, what_ << ": not a sieve shard message of version 1");
  }
  uint32_t u32() { return get<uint32_t>(); }
  int32_t i32() { return get<int32_t>(); }
  double f64() { return get<double>(); }
  uint64_t u64() { return get<uint64_t>(); }
  std::string str() {
    const size_t n = u32();
    need(n);
    std::string out = s_.substr(pos_, n);
    pos_ += n;
    return out;
  }
  void floats(float* p, size_t n) {
    SIEVE_THROW_IF_NOT(n <= (s_.size() - pos_) / sizeof(float), what_ << ": truncated");
    std::memcpy(p, s_.data() + pos_, n * sizeof(float));
    pos_ += n * sizeof(float);
  }
  std::vector<uint32_t> u32s() {
    const size_t n = u32();
    SIEVE_THROW_IF_NOT(n <= (s_.size() - pos_) / 4, what_ << ": truncated");
    std::vector<uint32_t> v(n);
    std::memcpy(v.data(), s_.data() + pos_, n * 4);
    pos_ += n * 4;
    return v;
  }
  // `rows` x `cols` floats (their count checked against the body before allocating).
  std::vector<float> matrix(size_t rows, size_t cols) {
    fits(rows * cols, sizeof(float));
    std::vector<float> v(rows * cols);
    floats(v.data(), v.size());
    return v;
  }
  // Checks that a count of `n` items of `bytes` each can still be in the body (before allocating).
  void fits(size_t n, size_t bytes) { SIEVE_THROW_IF_NOT(bytes == 0 || n <= (s_.size() - pos_) / bytes, what_ << ": truncated"); }
  void done() const { SIEVE_THROW_IF_NOT(pos_ == s_.size(), what_ << ": " << s_.size() - pos_ << " trailing bytes"); }

 private:
  template <class T>
  T get() {
    need(sizeof(T));
    T v;
    std::memcpy(&v, s_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  void need(size_t n) const { SIEVE_THROW_IF_NOT(n <= s_.size() - pos_, what_ << ": truncated"); }
  const std::string& s_;
  const char* what_;
  size_t pos_ = 0;
};

}  // namespace

std::string encode(const DenseRequest& r) {
  SIEVE_THROW_IF_NOT(r.pooled.size() == size_t{r.n} * r.dim, "dense request: " << r.n << " x " << r.dim << " keys expected");
  Writer w;
  w.u32(r.n);
  w.u32(r.dim);
  w.u32(r.depth);
  w.i32(r.ef_search);
  w.i32(r.nprobe);
  w.f64(r.now);
  w.str(r.filter);
  w.floats(r.pooled.data(), r.pooled.size());
  return w.take();
}

DenseRequest decode_dense_request(const std::string& body) {
  Reader rd(body, "dense request");
  DenseRequest r;
  r.n = rd.u32();
  r.dim = rd.u32();
  r.depth = rd.u32();
  r.ef_search = rd.i32();
  r.nprobe = rd.i32();
  r.now = rd.f64();
  r.filter = rd.str();
  SIEVE_THROW_IF_NOT(r.dim > 0 || r.n == 0, "dense request: keys of width 0");
  r.pooled = rd.matrix(r.n, r.dim);
  rd.done();
  return r;
}

std::string encode_lists(const Lists& lists) {
  Writer w;
  w.u32(Writer::count(lists.size()));
  for (const auto& l : lists) {
    w.u32(Writer::count(l.size()));
    for (const auto& [id, score] : l) {
      w.u32(id);
      w.f64(score);
    }
  }
  return w.take();
}

Lists decode_lists(const std::string& body) {
  Reader rd(body, "dense answer");
  const uint32_t n = rd.u32();
  rd.fits(n, 4);
  Lists out(n);
  for (auto& l : out) {
    const uint32_t m = rd.u32();
    rd.fits(m, 12);
    l.reserve(m);
    for (uint32_t j = 0; j < m; ++j) {
      const uint32_t id = rd.u32();
      l.emplace_back(id, rd.f64());
    }
  }
  rd.done();
  return out;
}

std::string encode(const DocsRequest& r) {
  Writer w;
  w.u32(r.max_rows);
  w.u32s(r.docs);
  return w.take();
}

DocsRequest decode_docs_request(const std::string& body) {
  Reader rd(body, "documents request");
  DocsRequest r;
  r.max_rows = rd.u32();
  r.docs = rd.u32s();
  rd.done();
  return r;
}

std::string encode_states(const std::vector<TokenStates>& states, uint32_t dim) {
  Writer w;
  w.u32(dim);
  w.u32(Writer::count(states.size()));
  for (const TokenStates& t : states) {
    SIEVE_THROW_IF_NOT(t.values.size() == t.length * dim, "token states of width " << dim << " expected");
    w.u32(Writer::count(t.length));
    w.floats(t.values.data(), t.values.size());
  }
  return w.take();
}

std::vector<TokenStates> decode_states(const std::string& body) {
  Reader rd(body, "token states");
  const uint32_t dim = rd.u32(), n = rd.u32();
  rd.fits(n, 4);
  std::vector<TokenStates> out(n);
  for (TokenStates& t : out) {
    t.length = rd.u32();
    t.values = rd.matrix(t.length, dim);
  }
  rd.done();
  return out;
}

std::string encode_floats(const std::vector<float>& values) {
  Writer w;
  w.u32(Writer::count(values.size()));
  w.floats(values.data(), values.size());
  return w.take();
}

std::vector<float> decode_floats(const std::string& body) {
  Reader rd(body, "floats");
  std::vector<float> out = rd.matrix(rd.u32(), 1);
  rd.done();
  return out;
}

std::string encode(const ScoresRequest& r) {
  SIEVE_THROW_IF_NOT(r.query.values.size() == r.query.length * r.dim, "scores request: token states of width " << r.dim);
  SIEVE_THROW_IF_NOT(r.query.ids.empty() || r.query.ids.size() == r.query.length, "scores request: one id per token");
  Writer w;
  w.str(r.verifier);
  w.u32(r.dim);
  w.u32(Writer::count(r.query.length));
  w.floats(r.query.values.data(), r.query.values.size());
  w.u32(Writer::count(r.query.ids.size()));
  for (int32_t id : r.query.ids) w.i32(id);
  w.u32s(r.docs);
  return w.take();
}

ScoresRequest decode_scores_request(const std::string& body) {
  Reader rd(body, "scores request");
  ScoresRequest r;
  r.verifier = rd.str();
  r.dim = rd.u32();
  r.query.length = rd.u32();
  r.query.values = rd.matrix(r.query.length, r.dim);
  const uint32_t ids = rd.u32();
  SIEVE_THROW_IF_NOT(ids == 0 || ids == r.query.length, "scores request: " << ids << " ids for " << r.query.length
                                                                           << " token states");
  rd.fits(ids, 4);
  r.query.ids.resize(ids);
  for (auto& id : r.query.ids) id = rd.i32();
  r.docs = rd.u32s();
  rd.done();
  return r;
}

std::string encode_terms(const std::vector<std::string>& terms) {
  Writer w;
  w.u32(Writer::count(terms.size()));
  for (const std::string& t : terms) w.str(t);
  return w.take();
}

std::vector<std::string> decode_terms(const std::string& body) {
  Reader rd(body, "BM25 statistics request");
  const uint32_t n = rd.u32();
  rd.fits(n, 4);
  std::vector<std::string> out(n);
  for (auto& t : out) t = rd.str();
  rd.done();
  return out;
}

std::string encode(const index::Bm25Stats& st) {
  Writer w;
  w.u64(st.documents);
  w.u64(st.total_length);
  w.u32(Writer::count(st.termfreqs.size()));
  for (uint64_t f : st.termfreqs) w.u64(f);
  return w.take();
}

index::Bm25Stats decode_bm25_stats(const std::string& body) {
  Reader rd(body, "BM25 statistics");
  index::Bm25Stats st;
  st.documents = rd.u64();
  st.total_length = rd.u64();
  const uint32_t n = rd.u32();
  rd.fits(n, 8);
  st.termfreqs.resize(n);
  for (auto& f : st.termfreqs) f = rd.u64();
  rd.done();
  return st;
}

std::string encode(const Bm25Request& r) {
  Writer w;
  w.u32(r.depth);
  w.f64(r.now);
  w.str(r.filter);
  w.u64(r.documents);
  w.u64(r.total_length);
  w.u32(Writer::count(r.queries.size()));
  for (const index::Bm25Query& q : r.queries) {
    SIEVE_THROW_IF_NOT(q.wqf.size() == q.terms.size() && q.termfreqs.size() == q.terms.size(),
                       "BM25 request: counts and document counts for every term");
    w.u32(Writer::count(q.terms.size()));
    for (size_t i = 0; i < q.terms.size(); ++i) {
      w.str(q.terms[i]);
      w.u32(q.wqf[i]);
      w.u64(q.termfreqs[i]);
    }
  }
  return w.take();
}

Bm25Request decode_bm25_request(const std::string& body) {
  Reader rd(body, "BM25 request");
  Bm25Request r;
  r.depth = rd.u32();
  r.now = rd.f64();
  r.filter = rd.str();
  r.documents = rd.u64();
  r.total_length = rd.u64();
  const uint32_t n = rd.u32();
  rd.fits(n, 4);
  r.queries.resize(n);
  for (auto& q : r.queries) {
    const uint32_t m = rd.u32();
    rd.fits(m, 16);  // each term: its length, count and document count at least
    for (uint32_t i = 0; i < m; ++i) {
      q.terms.push_back(rd.str());
      q.wqf.push_back(rd.u32());
      q.termfreqs.push_back(rd.u64());
    }
  }
  rd.done();
  return r;
}

namespace {
template <class Fn>
auto from_json(const std::string& body, const char* what, Fn&& fn) {
  try {
    return fn(nlohmann::json::parse(body));
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string(what) + ": not the JSON expected (" + e.what() + ")");
  }
}
}  // namespace

std::string documents_json(const std::vector<Document>& docs) {
  nlohmann::json a = nlohmann::json::array();
  for (const Document& d : docs)
    a.push_back({{"id", d.id}, {"title", d.title}, {"text", d.text}, {"metadata", d.metadata}, {"expires_at", d.expires_at}});
  return a.dump();
}

std::vector<Document> decode_documents(const std::string& body) {
  return from_json(body, "documents answer", [](const nlohmann::json& a) {
    SIEVE_THROW_IF_NOT(a.is_array(), "documents answer: not a list");
    std::vector<Document> out;
    for (const auto& j : a) {
      Document d;
      d.id = j.at("id").get<std::string>();
      d.title = j.at("title").get<std::string>();
      d.text = j.at("text").get<std::string>();
      d.metadata = j.at("metadata").get<std::string>();
      d.expires_at = j.at("expires_at").get<double>();
      out.push_back(std::move(d));
    }
    return out;
  });
}

std::string stats_json(const IndexStats& s) {
  nlohmann::json files = nlohmann::json::array();
  for (const auto& [name, bytes] : s.file_bytes) files.push_back({name, bytes});
  return nlohmann::json{{"documents", s.documents}, {"dim", s.dim}, {"tokens", s.tokens},
                        {"vector_factory", s.vector_factory}, {"token_codec", s.token_codec},
                        {"token_code_bytes", s.token_code_bytes}, {"model_identity", s.model_identity},
                        {"model_path", s.model_path}, {"key_grid", s.key_grid}, {"bytes_on_disk", s.bytes_on_disk},
                        {"file_bytes", files}, {"shards", s.shards}, {"deleted", s.deleted},
                        {"has_metadata", s.has_metadata}}
      .dump();
}

IndexStats decode_stats(const std::string& body) {
  return from_json(body, "statistics answer", [](const nlohmann::json& j) {
    IndexStats s;
    s.documents = j.at("documents").get<size_t>();
    s.dim = j.at("dim").get<size_t>();
    s.tokens = j.at("tokens").get<uint64_t>();
    s.vector_factory = j.at("vector_factory").get<std::string>();
    s.token_codec = j.at("token_codec").get<std::string>();
    s.token_code_bytes = j.at("token_code_bytes").get<size_t>();
    s.model_identity = j.at("model_identity").get<std::string>();
    s.model_path = j.at("model_path").get<std::string>();
    s.key_grid = j.at("key_grid").get<std::string>();
    s.bytes_on_disk = j.at("bytes_on_disk").get<uint64_t>();
    for (const auto& f : j.at("file_bytes")) s.file_bytes.emplace_back(f.at(0).get<std::string>(), f.at(1).get<uint64_t>());
    s.shards = j.at("shards").get<size_t>();
    s.deleted = j.at("deleted").get<size_t>();
    s.has_metadata = j.at("has_metadata").get<bool>();
    return s;
  });
}

}  // namespace sieve::serve::shard_wire
