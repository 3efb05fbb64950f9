// BEIR-layout evaluation inputs (queries, qrels) and TREC run files.
// Readers throw sieve::Error naming the file and the 1-based line at fault.
#pragma once

#include <map>
#include <ostream>
#include <string>
#include <vector>

namespace sieve::eval {

/// One query: its id and its text.
struct Query {
  std::string id;
  std::string text;
};

/// Reads queries by extension: `.jsonl` BEIR lines {"_id", "text"}, `.tsv` `id<TAB>text` with an
/// optional header (`query-id`/`_id`/`id`), else one query per line with ids "1", "2", ...
std::vector<Query> read_queries(const std::string& path);

/// Relevance judgements: query id -> doc id -> graded relevance (> 0 means relevant).
using Qrels = std::map<std::string, std::map<std::string, int>>;

/// Reads BEIR `qrels/<split>.tsv` (header `query-id corpus-id score`) or, without that header, a
/// TREC qrels file with four whitespace-separated columns `qid iter docid rel`.
Qrels read_qrels(const std::string& path);

/// One retrieved document with the score the system gave it.
struct RunEntry {
  std::string doc_id;
  double score = 0.0;
};

/// Retrieval results: query id -> entries in rank order (best first).
using Run = std::map<std::string, std::vector<RunEntry>>;

/// Writes `ranked` as TREC run lines `qid Q0 docid rank score run_name`, ranks starting at 1.
void write_trec_run(std::ostream& out, const std::string& query_id, const std::vector<RunEntry>& ranked,
                    const std::string& run_name);

/// Reads a six-column TREC run file; each query's entries are ordered by the rank column.
Run read_trec_run(const std::string& path);

}  // namespace sieve::eval
