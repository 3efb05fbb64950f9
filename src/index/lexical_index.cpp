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

std::vector<std::pair<uint32_t, double>> XapianLexicalIndex::search(const std::string& query, size_t k,
                                                                    uint32_t limit) const {
  std::vector<std::pair<uint32_t, double>> out;
  if (k == 0) return out;
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
    Xapian::Enquire enquire(*db_);
    enquire.set_query(q);
    // Xapian's BM25Weight(k1, k2, k3, b, min_normlen): k2 = 0 and k3 = 1 give the classic formula.
    enquire.set_weighting_scheme(Xapian::BM25Weight(params_.k1, 0, 1, params_.b, 0.5));
    enquire.set_docid_order(Xapian::Enquire::ASCENDING);
    // Fetch a few extra in case documents of an uncommitted add rank high.
    Xapian::doccount extra = db_->get_doccount() > limit ? db_->get_doccount() - limit : 0;
    Xapian::MSet mset = enquire.get_mset(0, static_cast<Xapian::doccount>(k) + extra);
    for (auto it = mset.begin(); it != mset.end() && out.size() < k; ++it) {
      uint32_t doc = *it - 1;
      if (doc < limit) out.emplace_back(doc, it.get_weight());
    }
    return out;
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
    Xapian::docid last = db_->get_lastdocid();
    for (Xapian::docid id = count + 1; id <= last; ++id) {
      try {
        db_->delete_document(id);
      } catch (const Xapian::DocNotFoundError&) {
      }
    }
  });
}

void XapianLexicalWriter::commit() {
  xapian_call("cannot commit the lexical index '" + path_ + "'", [&] { db_->commit(); });
}

uint32_t XapianLexicalWriter::doc_count() const { return db_->get_doccount(); }

}  // namespace sieve::index
