// Corpus files on arbitrary bytes, as `index build` reads them: BEIR JSON lines, TSV, text.
#include "fuzz_target.h"
#include "index/corpus_reader.h"

SIEVE_FUZZ_TARGET(corpus) {
  for (const char* name : {"c.jsonl", "c.tsv", "c.txt"}) {
    const std::string path = sieve::fuzz::input_file(data, size, name);
    sieve::fuzz::expect_only_sieve_errors([&] {
      sieve::index::CorpusReader r(path);
      sieve::Document d;
      while (r.next(d)) {
      }
    });
    sieve::fuzz::expect_only_sieve_errors([&] { sieve::index::CorpusReader::count(path); });
  }
  return 0;
}
