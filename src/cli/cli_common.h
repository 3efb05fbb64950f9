// Helpers shared by the CLI subcommands: input gathering, JSON output, error boundaries.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <iosfwd>
#include <stdexcept>
#include <string>
#include <vector>

#include "sieve/encoder.h"
#include "sieve/filter.h"
#include "sieve/index.h"

namespace sieve::cli {

/// --device and --threads, shared by every command that runs the encoder.
struct DeviceFlags {
  std::string device = "cpu";
  int threads = 0;
  std::string precision = "fp32";
  std::string engine = "auto";
  void add(CLI::App* cmd);
  /// EncoderOptions with the device, thread count, precision and engine set.
  EncoderOptions options() const;
};

/// Where a command's texts come from: positional arguments, else --input FILE ('-' = stdin),
/// else standard input. One text per line for files and stdin.
struct TextSource {
  std::vector<std::string> args;
  std::string input_file;
  /// Adds the positional TEXT... and --input options to a subcommand.
  void add_options(CLI::App* cmd);
  /// Collects the texts in input order; throws sieve::Error when a file cannot be read.
  std::vector<std::string> read() const;
};


/// Stage-1 settings of a search command: the model folder's recommendation `rec`, overridden
/// by whichever of --mode, --fusion, --rrf-k, --dense-weight `cmd` was given (`mode` and `fusion`
/// hold those flags' values, empty when absent; --rrf-k and --dense-weight are read from `p`).
/// Says on stderr when the recommendation chose the mode.
void apply_search_flags(const CLI::App& cmd, const SearchRecommendation& rec, const std::string& mode,
                        const std::string& fusion, SearchParams& p);

/// Ends every --verifier help: how a file is told from a built-in name.
extern const char* const kVerifierNames;

/// The default model as --model helps name it (the rule of default_model_dir): "$SIEVE_MODEL_DIR
/// when set, else the installed all-MiniLM-L6-v2, else ...".
extern const char* const kDefaultModel;

/// "a,B,,c" -> {"a", "B", "c"} (empty items dropped); lower-cased when `lower` is true.
std::vector<std::string> split_list(const std::string& s, bool lower = false);

/// Appends a float with 7 significant digits (enough to round-trip to ~1e-7) to a JSON string.
void append_float(std::string& out, float v);
/// Appends a JSON array of floats.
void append_float_array(std::string& out, const float* v, size_t n);
/// Quotes a string as JSON (invalid UTF-8 replaced by U+FFFD).
std::string json_quote(const std::string& s);

/// A positive whole number (for counts such as -k or --batch-size): "must be at least 1" instead
/// of CLI11's range message.
extern const CLI::Validator kPositive;
/// A number >= 0: "must be a number, at least 0" instead of CLI11's range message.
extern const CLI::Validator kNonNegative;

/// When argv names a subcommand that does not exist ("sieve bogus", "sieve index bogus"), the
/// message for it: "unknown command 'bogus' (commands: ...)"; empty otherwise.
std::string unknown_subcommand(const CLI::App& app, int argc, const char* const* argv);

/// Parses the command line and runs the chosen command: the exit code (0 ok, 1 runtime error,
/// 2 usage error). An unknown command or argument is named before anything else is checked
/// (a missing required option, a bad value).
int run_command_line(CLI::App& app, int argc, char** argv);

/// A usage mistake found only once the command runs (e.g. too few texts on stdin): exit code 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Runs a command body, turning sieve::Error and std::exception into "sieve: error: ..." on
/// stderr and exit code 1 (UsageError: 2). Returns the exit code.
int run_guarded(const std::function<void()>& body);

/// A --filter flag's filter (empty text: none); a malformed one is a UsageError (exit 2) with the
/// parser's words, which name the place in the filter.
Filter parse_filter_flag(const std::string& text);

/// Makes `body` the subcommand's action, run through run_guarded; a failure exits with 1.
void on_run(CLI::App* cmd, std::function<void()> body);

/// Registers the subcommands; each file in src/cli/ defines one.
/// Runs `serve` (a server's blocking loop) with SIGTERM and SIGINT, and SIGHUP when `hangup`,
/// handed to `on_signal` on a waiting thread: the handler only writes the signal's number to a
/// pipe (async-signal-safe, whichever thread it lands on). `on_signal` stops the server for
/// SIGTERM / SIGINT (the waiting then ends) and does whatever SIGHUP means. The handlers are
/// restored once `serve` returns or throws (rethrown).
void serve_with_signals(const std::function<void()>& serve, const std::function<void(int)>& on_signal, bool hangup);

void register_tokenize(CLI::App& app);
void register_embed(CLI::App& app);
void register_similarity(CLI::App& app);
void register_make_fixture(CLI::App& app);
void register_index(CLI::App& app);
void register_search(CLI::App& app);
void register_verify(CLI::App& app);
void register_explain(CLI::App& app);
void register_train(CLI::App& app);
void register_nearmiss(CLI::App& app);
void register_eval(CLI::App& app);
void register_experiment(CLI::App& app);
void register_corpus(CLI::App& app);
void register_vocab(CLI::App& app);
void register_model(CLI::App& app);
void register_serve(CLI::App& app);
void register_cache(CLI::App& app);
void register_shard(CLI::App& app);

}  // namespace sieve::cli
