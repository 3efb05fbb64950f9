#include "index/lexical_index.h"

#include <xapian.h>

#include <algorithm>

#include "sieve/error.h"

namespace sieve::index {
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

XapianLexicalIndex::~XapianLexicalIndex() = default;

uint32_t XapianLexicalIndex::doc_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return db_->get_doccount();
}

namespace {

// Keeps documents a reader's manifest committed (Xapian docid <= limit); an interrupted add can
// leave more in the database until the next writer removes them.
class CommittedOnly : public Xapian::MatchDecider {
 public:
  explicit CommittedOnly(Xapian::docid limit) : limit_(limit) {}
  bool operator()(const Xapian::Document& d) const override { return d.get_docid() <= limit_; }

 private:
  Xapian::docid limit_;
};

}  // namespace

std::vector<std::pair<uint32_t, double>> XapianLexicalIndex::search(const std::string& query, size_t k,
                                                                    uint32_t limit) const {
  std::vector<std::pair<uint32_t, double>> out;
  if (k == 0) return out;
  const Xapian::doccount want = static_cast<Xapian::doccount>(std::min<size_t>(k, limit));
  std::lock_guard<std::mutex> lock(mu_);
  return xapian_call("BM25 search failed", [&] {
    Xapian::QueryParser qp;
    qp.set_stemmer(Xapian::Stem("english"));
    qp.set_stemming_strategy(Xapian::QueryParser::STEM_ALL);
    qp.set_stopper(&stopper());
    qp.set_default_op(Xapian::Query::OP_OR);
    Xapian::Query q;
    try {
      // No operators: a query is a bag of words, as in BM25 baselines.
      q = qp.parse_query(query, 0);
    } catch (const Xapian::QueryParserError&) {
      q = Xapian::Query();
    }
    CommittedOnly decider(limit);
    // A writer in another process (index add) may commit while this reader is open; Xapian then
    // asks readers to reopen to the latest revision. Committed documents stay as they were.
    for (int attempt = 0;; ++attempt) {
      try {
        Xapian::Enquire enquire(*db_);
        enquire.set_query(q);
        // Xapian's BM25Weight(k1, k2, k3, b, min_normlen): k2 = 0 and k3 = 1 give the classic formula.
        enquire.set_weighting_scheme(Xapian::BM25Weight(params_.k1, 0, 1, params_.b, 0.5));
        enquire.set_docid_order(Xapian::Enquire::ASCENDING);
        Xapian::MSet mset = enquire.get_mset(0, want, nullptr, &decider);
        out.clear();
        for (auto it = mset.begin(); it != mset.end(); ++it) out.emplace_back(*it - 1, it.get_weight());
        return out;
      } catch (const Xapian::DatabaseModifiedError&) {
        if (attempt >= 3) throw;
        db_->reopen();
      }
    }
  });
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
