// Evaluation inputs on arbitrary bytes: queries (JSON lines, TSV, text, and sniffed), qrels
// (BEIR and TREC), TREC runs.
#include "eval/beir.h"
#include "fuzz_target.h"

SIEVE_FUZZ_TARGET(eval_files) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  using sieve::eval::QueriesLayout;
  for (QueriesLayout l : {QueriesLayout::Jsonl, QueriesLayout::Tsv, QueriesLayout::Text})
    sieve::fuzz::expect_only_sieve_errors([&] { sieve::eval::parse_queries(text, "queries", l); });
  sieve::fuzz::expect_only_sieve_errors([&] { sieve::eval::sniff_queries_layout(text); });
  const std::string qrels = sieve::fuzz::input_file(data, size, "qrels.tsv");
  sieve::fuzz::expect_only_sieve_errors([&] { sieve::eval::read_qrels(qrels); });
  sieve::fuzz::expect_only_sieve_errors([&] { sieve::eval::read_trec_run(qrels); });
  return 0;
}
