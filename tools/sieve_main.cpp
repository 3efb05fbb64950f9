// The `sieve` command line: a thin shell over the library (see docs/cli.md).
#include <csignal>
#include <cstdio>
#include <CLI/CLI.hpp>

#include "cli/cli_common.h"
#include "sieve/encoder.h"

int main(int argc, char** argv) {
  // A write past RLIMIT_FSIZE (a file-size limit, or a full quota) must fail with EFBIG and reach
  // the caller as an error naming the file, not kill the process with SIGXFSZ mid-write.
  ::signal(SIGXFSZ, SIG_IGN);
  sieve::ensure_fast_blas(argv);
  sieve::tune_allocator();
  CLI::App app{"sieve: semantic search that verifies identity (stage 1 recall, stage 2 verification)"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "sieve 0.1.0");
  sieve::cli::register_tokenize(app);
  sieve::cli::register_embed(app);
  sieve::cli::register_similarity(app);
  sieve::cli::register_make_fixture(app);
  sieve::cli::register_index(app);
  sieve::cli::register_search(app);
  sieve::cli::register_verify(app);
  sieve::cli::register_explain(app);
  sieve::cli::register_train(app);
  sieve::cli::register_nearmiss(app);
  sieve::cli::register_eval(app);
  sieve::cli::register_experiment(app);
  sieve::cli::register_corpus(app);
  sieve::cli::register_vocab(app);
  sieve::cli::register_model(app);
  sieve::cli::register_serve(app);
  sieve::cli::register_cache(app);
  sieve::cli::register_shard(app);
  return sieve::cli::run_command_line(app, argc, argv);
}
