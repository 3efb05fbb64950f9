// `sieve corpus build`: clean text and training pairs from Debian's dictionaries (docs/corpus.md).
#include <algorithm>
#include <cstdio>
#include <memory>
#include <sstream>

#include "cli/cli_common.h"
#include "corpus/corpus_builder.h"
#include "sieve/error.h"

namespace sieve::cli {

void register_corpus(CLI::App& app) {
  auto* group = app.add_subcommand(
      "corpus", "Training text and pairs from installed dictionaries (WordNet, GCIDE, FOLDOC)");
  group->require_subcommand(1);
  struct Opts {
    std::string out, sources;
    size_t max_entries = 0;
    std::string wordnet = nearmiss::Lexicon::kDefaultDir;
    std::string dictd = "/usr/share/dictd";
  };
  auto o = std::make_shared<Opts>();
  auto* cmd = group->add_subcommand("build",
                                    "Write sentences.txt (MLM text), examples.txt (example sentences), "
                                    "pairs.jsonl (anchor/positive pairs) and "
                                    "report.json into --out; prints the report");
  cmd->footer(
      "Sources: wordnet (apt install wordnet-base), gcide (apt install dict-gcide), foldoc (apt install "
      "dict-foldoc). Without --sources every installed one is read and a missing one is skipped with a "
      "warning; a "
      "source named in --sources must be installed.");
  cmd->add_option("-o,--out", o->out, "Output folder (created when missing; the four files are replaced)")
      ->required();
  cmd->add_option("--sources", o->sources,
                  "Comma-separated: wordnet, gcide, foldoc (default: all installed)");
  cmd->add_option("--max-entries", o->max_entries, "Read at most this many entries per source (0 = all)")
      ->capture_default_str();
  cmd->add_option("--wordnet", o->wordnet, "WordNet 3.0 database folder")->capture_default_str();
  cmd->add_option("--dictd", o->dictd, "Folder of the dictd databases (gcide.index, gcide.dict.dz, foldoc.*)")
      ->capture_default_str();
  on_run(cmd, [o] {
    corpus::CorpusOptions opt;
    opt.out_dir = o->out;
    opt.max_entries = o->max_entries;
    opt.wordnet_dir = o->wordnet;
    opt.dictd_dir = o->dictd;
    std::stringstream ss(o->sources);
    for (std::string name; std::getline(ss, name, ',');) {
      if (name.empty()) continue;
      corpus::Source s = corpus::source_from_name(name);
      SIEVE_THROW_IF_NOT(std::find(opt.sources.begin(), opt.sources.end(), s) == opt.sources.end(),
                         "--sources names '" << name << "' twice");
      opt.sources.push_back(s);
    }
    SIEVE_THROW_IF_NOT(o->sources.empty() || !opt.sources.empty(), "--sources is empty");
    corpus::CorpusReport report = corpus::build_corpus(opt);
    std::printf("%s\n",
                report.to_json().dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  });
}

}  // namespace sieve::cli
