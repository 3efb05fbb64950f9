// BEIR-layout evaluation inputs (queries, qrels) and TREC run files.
// Readers throw sieve::Error naming the file and the 1-based line at fault.
#pragma once

#include <map>
#include <ostream>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

namespace sieve::eval {

/// One query: its id and its text.
struct Query {
  std::string id;
  std::string text;
};

/// Layouts of a queries file: BEIR lines {"_id", "text"}; `id<TAB>text` with an optional header
/// (`query-id`/`_id`/`id`); one query per line with ids "1", "2", ...
enum class QueriesLayout { Jsonl, Tsv, Text };

/// The layout of queries without a telling name: JSON lines when the first non-blank line starts
/// with '{', TSV when it holds a tab, else text.
QueriesLayout sniff_queries_layout(std::string_view content);

/// Parses queries laid out as `layout` (a UTF-8 byte order mark is skipped); `name` appears in
/// error messages.
std::vector<Query> parse_queries(std::string_view content, const std::string& name, QueriesLayout layout);

/// Reads queries: `.jsonl`, `.tsv` and `.txt` by extension, any other name by sniff_queries_layout.
std::vector<Query> read_queries(const std::string& path);

/// Reads queries from a stream (stdin), laid out as sniff_queries_layout finds; `detected` gets
/// the layout. `name` appears in error messages.
std::vector<Query> read_queries(std::istream& in, const std::string& name, QueriesLayout* detected = nullptr);

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

/// TREC files split columns on whitespace, so an id holding whitespace (BEIR ids from Wikipedia
/// titles: Climate-FEVER, FEVER, HotpotQA) is written percent-escaped: each whitespace character and
/// '%' become %XX ("Barack Obama" -> "Barack%20Obama"); other ids are written unchanged. The run
/// and qrels writers escape and the TREC readers undo it (an id is unescaped only when it holds a
/// whitespace escape, %20 %09 %0A-%0D), so sieve's runs and qrels match under trec_eval.
std::string trec_escape_id(const std::string& id);
std::string trec_unescape_id(std::string_view token);

/// Writes `ranked` as TREC run lines `qid Q0 docid rank score run_name`, ranks starting at 1.
void write_trec_run(std::ostream& out, const std::string& query_id, const std::vector<RunEntry>& ranked,
                    const std::string& run_name);

/// Reads a six-column TREC run file; each query's entries are ordered by the rank column.
Run read_trec_run(const std::string& path);

}  // namespace sieve::eval
