#include "index/lexical_index.h"

#include <xapian.h>

#include <algorithm>
#include <unordered_map>
#include <cmath>
#include <map>
#include <type_traits>

#include "index/doc_state.h"
#include "sieve/error.h"

namespace sieve::index {
static_assert(std::is_same_v<Xapian::docid, unsigned>, "rescore() takes Xapian docids as unsigned");
namespace {

// The English stop set of Lucene's StandardAnalyzer/EnglishAnalyzer (the analyser behind BEIR's
// Elasticsearch BM25 baseline).
const char* const kStopWords[] = {"a",     "an",   "and",  "are",   "as",    "at",   "be",   "but",  "by",
                                  "for",   "if",   "in",   "into",  "is",    "it",   "no",   "not",  "of",
                                  "on",    "or",   "such", "that",  "the",   "their", "then", "there",
                                  "these", "they", "this", "to",    "was",   "will", "with"};

const Xapian::SimpleStopper& stopper() {
  static const Xapian::SimpleStopper s(std::begin(kStopWords), std::end(kStopWords));
  return s;
}

template <class Fn>
auto xapian_call(const std::string& what, Fn&& fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (const Xapian::Error& e) {
    SIEVE_THROW(what << ": " << e.get_description());
  }
}

}  // namespace

// --- reader ------------------------------------------------------------------------------------

XapianLexicalIndex::XapianLexicalIndex(const std::string& path, const Bm25Params& params) : params_(params) {
  db_ = xapian_call("cannot open the lexical index '" + path + "' (damaged?)",
                    [&] { return std::make_unique<Xapian::Database>(path, Xapian::DB_BACKEND_GLASS); });
}

XapianLexicalIndex::XapianLexicalIndex(const std::vector<std::string>& paths, const Bm25Params& params)
    : shards_(paths.size()), params_(params) {
  SIEVE_THROW_IF_NOT(!paths.empty(), "internal: a lexical index of no databases");
  db_ = std::make_unique<Xapian::Database>();
  for (const std::string& path : paths)
    xapian_call("cannot open the lexical index '" + path + "' (damaged?)", [&] {
      const Xapian::Database one(path, Xapian::DB_BACKEND_GLASS);
      uuids_.push_back(one.get_uuid());
      db_->add_database(one);
    });
  for (size_t i = 0; i < uuids_.size(); ++i)
    SIEVE_THROW_IF_NOT(!uuids_[i].empty() && std::count(uuids_.begin(), uuids_.end(), uuids_[i]) == 1,
                       "the lexical index '" << paths[i] << "' has no UUID of its own (a copy of another shard's?)");
}

XapianLexicalIndex::~XapianLexicalIndex() = default;

uint32_t XapianLexicalIndex::doc_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return db_->get_doccount();
}

namespace {

// Keeps documents a reader's manifest committed (an interrupted add can leave more in the database
// until the next writer removes them) and, with `allowed`, only the documents a filter, deletions
// and expiry leave. One database: Xapian's docid is the internal id + 1.
class CommittedOnly : public Xapian::MatchDecider {
 public:
  CommittedOnly(uint32_t limit, const Bitmap* allowed) : limit_(limit), allowed_(allowed) {}
  bool operator()(const Xapian::Document& d) const override {
    const Xapian::docid doc = d.get_docid() - 1;
    if (doc >= limit_) return false;
    return allowed_ == nullptr || (doc < allowed_->size() && allowed_->test(doc));
  }

 private:
  uint32_t limit_;
  const Bitmap* allowed_;
};

// The same rule over several databases, as a filter inside the match. A MatchDecider cannot apply
// it there: Xapian 1.4 gives it each document with its docid in its own database, not which
// database it is in. A posting source is cloned for each database and told which one (init), so
// it yields that database's documents below its limit that its bitmap allows (docids are the
// database's own: internal id + 1). Weight 0: it filters, the BM25 weights are the text query's.
class AllowedDocuments : public Xapian::PostingSource {
 public:
  AllowedDocuments(const std::vector<std::string>& uuids, const std::vector<uint32_t>& limits,
                   const std::vector<const Bitmap*>& allowed)
      : uuids_(uuids), limits_(limits), allowed_(allowed) {}
  Xapian::PostingSource* clone() const override { return new AllowedDocuments(uuids_, limits_, allowed_); }
  std::string name() const override { return "sieve.AllowedDocuments"; }
  void init(const Xapian::Database& db) override {
    const std::string uuid = db.get_uuid();
    const auto it = std::find(uuids_.begin(), uuids_.end(), uuid);
    if (it == uuids_.end()) throw Xapian::InvalidArgumentError("a database this search did not open: " + uuid);
    const size_t s = static_cast<size_t>(it - uuids_.begin());
    bitmap_ = allowed_.empty() ? nullptr : allowed_[s];
    limit_ = std::min<size_t>(limits_[s], db.get_lastdocid());
    if (bitmap_ != nullptr) limit_ = std::min(limit_, bitmap_->size());
    pos_ = kBefore;
    set_maxweight(0);
  }
  Xapian::doccount get_termfreq_min() const override { return 0; }
  Xapian::doccount get_termfreq_est() const override {
    return static_cast<Xapian::doccount>(bitmap_ != nullptr ? std::min(bitmap_->count(), limit_) : limit_);
  }
  Xapian::doccount get_termfreq_max() const override { return static_cast<Xapian::doccount>(limit_); }
  void next(double) override { seek(pos_ == kBefore ? 0 : pos_ + 1); }
  void skip_to(Xapian::docid did, double) override {
    if (pos_ == kBefore || did - 1 > pos_) seek(did - 1);
  }
  bool at_end() const override { return pos_ >= limit_; }
  Xapian::docid get_docid() const override { return static_cast<Xapian::docid>(pos_ + 1); }

 private:
  static constexpr size_t kBefore = static_cast<size_t>(-1);
  void seek(size_t from) { pos_ = from >= limit_ ? limit_ : bitmap_ != nullptr ? std::min(bitmap_->next_set(from), limit_) : from; }
  std::vector<std::string> uuids_;
  std::vector<uint32_t> limits_;
  std::vector<const Bitmap*> allowed_;
  const Bitmap* bitmap_ = nullptr;
  size_t limit_ = 0, pos_ = kBefore;
};

}  // namespace

std::map<std::string, unsigned> bm25_terms(const std::string& query) {
  return xapian_call("BM25 query parsing failed", [&] {
    Xapian::QueryParser qp;
    qp.set_stemmer(Xapian::Stem("english"));
    qp.set_stemming_strategy(Xapian::QueryParser::STEM_ALL);
    qp.set_stopper(&stopper());
    qp.set_default_op(Xapian::Query::OP_OR);
    // No operators: a query is a bag of words, as in BM25 baselines. The parser's terms (stemmed,
    // stop words out) go into one OR, each once with its count as its query frequency; the parser
    // would make phrases of hyphenated words ("0-dimensional"), which BM25 baselines do not.
    std::map<std::string, unsigned> terms;
    try {
      const Xapian::Query parsed = qp.parse_query(query, 0);
      for (auto t = parsed.get_terms_begin(); t != parsed.get_terms_end(); ++t) ++terms[*t];
    } catch (const Xapian::QueryParserError&) {
      terms.clear();
    }
    return terms;
  });
}

Bm25Stats XapianLexicalIndex::stats(const std::vector<std::string>& terms) const {
  SIEVE_THROW_IF_NOT(shards_ == 1, "internal: stats() of a lexical index over several databases");
  std::lock_guard<std::mutex> lock(mu_);
  return xapian_call("BM25 statistics failed", [&] {
    for (int attempt = 0;; ++attempt) {
      try {
        Bm25Stats st;
        st.documents = db_->get_doccount();
        st.total_length = db_->get_total_length();
        for (const std::string& t : terms) st.termfreqs.push_back(db_->get_termfreq(t));
        return st;
      } catch (const Xapian::DatabaseModifiedError&) {
        if (attempt >= 3) throw;
        db_->reopen();
      }
    }
  });
}

std::vector<std::pair<uint32_t, double>> XapianLexicalIndex::search_global(const Bm25Query& q, uint64_t documents,
                                                                           uint64_t total_length, size_t k,
                                                                           uint32_t limit, const Bitmap* allowed) const {
  SIEVE_THROW_IF_NOT(shards_ == 1, "internal: search_global() of a lexical index over several databases");
  SIEVE_THROW_IF_NOT(q.wqf.size() == q.terms.size() && q.termfreqs.size() == q.terms.size(),
                     "BM25 query: " << q.terms.size() << " terms, " << q.wqf.size() << " counts, " << q.termfreqs.size()
                                    << " document counts");
  for (size_t i = 1; i < q.terms.size(); ++i)
    SIEVE_THROW_IF_NOT(q.terms[i - 1] < q.terms[i], "BM25 query: terms out of byte order or repeated");
  std::vector<std::pair<uint32_t, double>> out;
  if (k == 0 || q.terms.empty()) return out;
  std::lock_guard<std::mutex> lock(mu_);
  return xapian_call("BM25 search failed", [&] {
    for (int attempt = 0;; ++attempt) {
      try {
        // rescore()'s terms, with the set's statistics instead of this database's.
        const double n_docs = static_cast<double>(documents);
        const double avlen = documents == 0 ? 0.0 : static_cast<double>(total_length) / static_cast<double>(documents);
        const double len_factor = avlen != 0 ? 1.0 / avlen : 0.0;
        const double k1 = params_.k1, b = params_.b, k3 = 1.0;
        std::unordered_map<uint32_t, double> acc;
        for (size_t t = 0; t < q.terms.size(); ++t) {
          const double f = q.wqf[t], n = static_cast<double>(q.termfreqs[t]);
          if (n == 0) continue;
          double tw = (n_docs - n + 0.5) / (n + 0.5);
          if (tw < 2) tw = tw * 0.5 + 1;
          const double termweight = std::log(tw) * ((k3 + 1) * f / (k3 + f)) * (k1 + 1);
          for (auto p = db_->postlist_begin(q.terms[t]); p != db_->postlist_end(q.terms[t]); ++p) {
            const uint32_t doc = *p - 1;
            if (doc >= limit || (allowed != nullptr && !allowed->test(doc))) continue;
            const double normlen = std::max(static_cast<double>(p.get_doclength()) * len_factor, kMinNormLen);
            const double wdf = p.get_wdf();
            acc[doc] += termweight * (wdf / (k1 * (normlen * b + (1 - b)) + wdf));
          }
        }
        out.assign(acc.begin(), acc.end());
        const auto better = [](const auto& x, const auto& y) { return x.second != y.second ? x.second > y.second : x.first < y.first; };
        if (out.size() > k) {
          std::partial_sort(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(k), out.end(), better);
          out.resize(k);
        } else {
          std::sort(out.begin(), out.end(), better);
        }
        return out;
      } catch (const Xapian::DatabaseModifiedError&) {
        if (attempt >= 3) throw;
        db_->reopen();
      }
    }
  });
}

std::vector<std::pair<uint32_t, double>> XapianLexicalIndex::search(const std::string& query, size_t k,
                                                                    uint32_t limit, const Bitmap* allowed) const {
  SIEVE_THROW_IF_NOT(shards_ == 1, "internal: search() of a lexical index over several databases");
  std::vector<std::pair<uint32_t, double>> out;
  std::vector<const Bitmap*> a;
  if (allowed != nullptr) a.push_back(allowed);
  for (const ShardHit& h : search_shards(query, k, {limit}, nullptr, a)) out.emplace_back(h.doc, h.score);
  return out;
}

std::vector<ShardHit> XapianLexicalIndex::search_shards(const std::string& query, size_t k,
                                                        const std::vector<uint32_t>& limits,
                                                        std::vector<double>* xapian_scores,
                                                        const std::vector<const Bitmap*>& allowed) const {
  SIEVE_THROW_IF_NOT(allowed.empty() || allowed.size() == shards_, "internal: allowed sets for " << allowed.size()
                                                                    << " of " << shards_ << " databases");
  SIEVE_THROW_IF_NOT(limits.size() == shards_, "internal: " << limits.size() << " limits for " << shards_ << " databases");
  std::vector<ShardHit> out;
  if (k == 0) return out;
  uint64_t committed = 0;
  for (uint32_t l : limits) committed += l;
  // Xapian sums a document's term weights in an order that depends on each database's own term
  // statistics, so one document scores an ulp apart in one database and in several. The hits
  // are scored again here in one order (rescore()), and a few more than asked are fetched so that
  // the k-th place is decided on those scores; equal scores go lower shard first, then lower id
  // (Xapian's interleaved docids would order them otherwise).
  const size_t extra = shards_ > 1 ? 64 : 16;
  const Xapian::doccount want = static_cast<Xapian::doccount>(std::min<uint64_t>(k + extra, committed));
  std::lock_guard<std::mutex> lock(mu_);
  return xapian_call("BM25 search failed", [&] {
    const std::map<std::string, unsigned> terms = bm25_terms(query);
    std::vector<Xapian::Query> leaves;
    for (const auto& [term, wqf] : terms) leaves.emplace_back(term, wqf);
    const Xapian::Query q(Xapian::Query::OP_OR, leaves.begin(), leaves.end());
    CommittedOnly decider(limits[0], allowed.empty() ? nullptr : allowed[0]);
    // Several databases: the rule as a filter of the match (AllowedDocuments), not the decider.
    AllowedDocuments source(uuids_, limits, allowed);
    const Xapian::Query query = shards_ > 1 ? Xapian::Query(Xapian::Query::OP_FILTER, q, Xapian::Query(&source)) : q;
    // A writer in another process (index add) may commit while this reader is open; Xapian then
    // asks readers to reopen to the latest revision. Committed documents stay as they were.
    for (int attempt = 0;; ++attempt) {
      try {
        Xapian::Enquire enquire(*db_);
        enquire.set_query(query);
        // Xapian's BM25Weight(k1, k2, k3, b, min_normlen): k2 = 0 and k3 = 1 give the classic formula.
        enquire.set_weighting_scheme(Xapian::BM25Weight(params_.k1, 0, 1, params_.b, kMinNormLen));
        enquire.set_docid_order(Xapian::Enquire::ASCENDING);
        Xapian::MSet mset = enquire.get_mset(0, want, nullptr, shards_ > 1 ? nullptr : &decider);
        std::vector<unsigned> ids;
        std::vector<double> xapian;
        for (auto it = mset.begin(); it != mset.end(); ++it) {
          ids.push_back(*it);
          xapian.push_back(it.get_weight());
        }
        const std::vector<double> scores = rescore(terms, ids);
        out.clear();
        for (size_t i = 0; i < ids.size(); ++i) {
          const Xapian::docid d = ids[i] - 1;
          out.push_back({static_cast<uint32_t>(d % shards_), static_cast<uint32_t>(d / shards_), scores[i]});
        }
        std::vector<size_t> order(out.size());
        for (size_t i = 0; i < order.size(); ++i) order[i] = i;
        std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
          const ShardHit& a = out[x];
          const ShardHit& b = out[y];
          if (a.score != b.score) return a.score > b.score;
          return a.shard != b.shard ? a.shard < b.shard : a.doc < b.doc;
        });
        if (order.size() > k) order.resize(k);
        std::vector<ShardHit> sorted;
        if (xapian_scores) xapian_scores->clear();
        for (size_t i : order) {
          sorted.push_back(out[i]);
          if (xapian_scores) xapian_scores->push_back(xapian[i]);
        }
        return sorted;
      } catch (const Xapian::DatabaseModifiedError&) {
        if (attempt >= 3) throw;
        db_->reopen();
      }
    }
  });
}

// BM25 as Xapian's BM25Weight computes it with k2 = 0, k3 = 1 and a query weight factor of 1:
//   idf  = log(tw), tw = (N - n + 0.5) / (n + 0.5), raised to 0.5 tw + 1 when below 2 (no
//          negative weights for terms in most documents);
//   term = idf * (k3 + 1) wqf / (k3 + wqf) * (k1 + 1) * wdf / (k1 (b L + 1 - b) + wdf),
//          L = max(doclength / average length, min_normlen);
// summed over the query's distinct terms in byte order. Statistics are those of every database
// (the multi-database's), so each shard's documents score as in one database.
std::vector<double> XapianLexicalIndex::rescore(const std::map<std::string, unsigned>& wqf,
                                                const std::vector<unsigned>& ids) const {
  std::vector<double> scores(ids.size(), 0.0);
  if (ids.empty()) return scores;
  const double n_docs = db_->get_doccount();
  const double avlen = db_->get_avlength();
  const double len_factor = avlen != 0 ? 1.0 / avlen : 0.0;
  std::vector<size_t> by_id(ids.size());
  for (size_t i = 0; i < by_id.size(); ++i) by_id[i] = i;
  std::sort(by_id.begin(), by_id.end(), [&](size_t a, size_t b) { return ids[a] < ids[b]; });
  std::vector<double> normlen(ids.size());
  for (size_t i = 0; i < ids.size(); ++i)
    normlen[i] = std::max(static_cast<double>(db_->get_doclength(ids[i])) * len_factor, kMinNormLen);
  const double k1 = params_.k1, b = params_.b, k3 = 1.0;
  for (const auto& [term, count] : wqf) {
    const double f = count, n = db_->get_termfreq(term);
    if (n == 0) continue;
    double tw = (n_docs - n + 0.5) / (n + 0.5);
    if (tw < 2) tw = tw * 0.5 + 1;
    const double termweight = std::log(tw) * ((k3 + 1) * f / (k3 + f)) * (k1 + 1);
    auto p = db_->postlist_begin(term);
    for (size_t i : by_id) {
      p.skip_to(ids[i]);
      if (p == db_->postlist_end(term)) break;
      if (*p != ids[i]) continue;
      const double wdf = p.get_wdf();
      scores[i] += termweight * (wdf / (k1 * (normlen[i] * b + (1 - b)) + wdf));
    }
  }
  return scores;
}

// --- writer ------------------------------------------------------------------------------------

XapianLexicalWriter::XapianLexicalWriter(const std::string& path) : path_(path) {
  db_ = xapian_call("cannot open the lexical index '" + path + "' for writing", [&] {
    return std::make_unique<Xapian::WritableDatabase>(path, Xapian::DB_CREATE_OR_OPEN | Xapian::DB_BACKEND_GLASS);
  });
}

XapianLexicalWriter::~XapianLexicalWriter() = default;

void XapianLexicalWriter::put(uint32_t doc, const std::string& title, const std::string& text) {
  xapian_call("cannot index document " + std::to_string(doc) + " for BM25", [&] {
    Xapian::TermGenerator tg;
    tg.set_stemmer(Xapian::Stem("english"));
    // Stem every term and drop stop words, like the English analyser of the BM25 baselines.
    tg.set_stemming_strategy(Xapian::TermGenerator::STEM_ALL);
    tg.set_stopper(&stopper());
    tg.set_stopper_strategy(Xapian::TermGenerator::STOP_ALL);
    Xapian::Document d;
    tg.set_document(d);
    // No positions: BM25 needs term frequencies only, and positions double the index size.
    if (!title.empty()) {
      tg.index_text_without_positions(title);
      tg.increase_termpos();
    }
    tg.index_text_without_positions(text);
    db_->replace_document(doc + 1, d);
  });
}

void XapianLexicalWriter::truncate(uint32_t count) {
  xapian_call("cannot trim the lexical index", [&] {
    // Walk the documents that exist past `count` (the last docid never shrinks in Xapian).
    std::vector<Xapian::docid> extra;
    Xapian::PostingIterator it = db_->postlist_begin("");
    it.skip_to(count + 1);
    for (; it != db_->postlist_end(""); ++it) extra.push_back(*it);
    for (Xapian::docid id : extra) db_->delete_document(id);
  });
}

void XapianLexicalWriter::commit() {
  xapian_call("cannot commit the lexical index '" + path_ + "'", [&] { db_->commit(); });
}

uint32_t XapianLexicalWriter::doc_count() const { return db_->get_doccount(); }

}  // namespace sieve::index
