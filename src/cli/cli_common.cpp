#include "cli/cli_common.h"

#include <signal.h>
#include <unistd.h>

#include <exception>
#include <thread>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <nlohmann/json.hpp>

#include "core/log.h"
#include "sieve/error.h"
#include "sieve/model.h"

namespace sieve::cli {

const CLI::Validator kPositive(
    [](std::string& v) -> std::string {
      try {
        size_t used = 0;
        const long long n = std::stoll(v, &used);
        if (used == v.size() && n >= 1) return {};
      } catch (const std::exception&) {
      }
      return "'" + v + "' must be a whole number, at least 1";
    },
    "POSITIVE");

const char* const kVerifierNames =
    "; name a file by a path with '/' (./F1) or ending in .safetensors: F0, F1, F2, cosine and default always "
    "mean the built-ins; cross:DIR is the cross-encoder in folder DIR (sieve train cross-encoder), which reads "
    "the texts; cascade:DIR is the model's gate with that cross-encoder for the candidates in its calibrated band";

const char* const kDefaultModel =
    "$SIEVE_MODEL_DIR when set, else the installed all-MiniLM-L6-v2, else the installed sieve-mini";

const CLI::Validator kNonNegative(
    [](std::string& v) -> std::string {
      try {
        size_t used = 0;
        const double x = std::stod(v, &used);
        if (used == v.size() && x >= 0) return {};
      } catch (const std::exception&) {
      }
      return "'" + v + "' must be a number, at least 0";
    },
    "NONNEGATIVE");

std::string unknown_subcommand(const CLI::App& app, int argc, const char* const* argv) {
  const CLI::App* at = &app;
  std::string path = "sieve";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.empty() || a[0] == '-') return {};
    const auto subs = at->get_subcommands([](const CLI::App*) { return true; });
    if (subs.empty()) return {};  // a leaf command: the rest are its arguments
    const CLI::App* next = nullptr;
    for (const CLI::App* s : subs)
      if (s->check_name(a)) next = s;
    if (next == nullptr) {
      std::string names;
      for (const CLI::App* s : subs) names += (names.empty() ? "" : ", ") + s->get_name();
      return "unknown command '" + path + " " + a + "' (" + path + " has: " + names + ")";
    }
    at = next;
    path += " " + a;
  }
  return {};
}

namespace {
// Results go to stdout through stdio's buffer: a full disk or a closed pipe shows only in fflush
// or ferror. Without this check `search ... > run.trec` on a full disk left a truncated file and
// exited 0.
int stdout_checked(int rc) {
  const bool flushed = std::fflush(stdout) == 0;
  const int e = errno;
  if (flushed && !std::ferror(stdout)) return rc;
  std::fprintf(stderr, "sieve: error: cannot write the results to standard output%s%s\n", flushed ? "" : ": ",
               flushed ? "" : std::strerror(e));
  return rc == 0 ? 1 : rc;
}
}  // namespace

int run_command_line(CLI::App& app, int argc, char** argv) {
  const std::string unknown = unknown_subcommand(app, argc, argv);
  if (!unknown.empty()) {
    std::fprintf(stderr, "sieve: error: %s; see sieve --help\n", unknown.c_str());
    return 2;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::RuntimeError& e) {
    return stdout_checked(e.get_exit_code());
  } catch (const CLI::ParseError& e) {
    // CLI11 checks required options and values before it looks for arguments nobody took, so
    // `search --bogus` said "--index is required"; the unknown argument is the real mistake.
    if (e.get_exit_code() != 0 && app.remaining_size(true) > 0)
      return app.exit(CLI::ExtrasError(app.get_name(), app.remaining(true))) == 0 ? 0 : 2;
    // Usage errors exit 2; --help and --version exit 0.
    return app.exit(e) == 0 ? 0 : 2;
  }
  return stdout_checked(0);
}

void DeviceFlags::add(CLI::App* cmd) {
  cmd->add_option("--device", device, "cpu, cuda or cuda:N")->capture_default_str();
  cmd->add_option("--threads", threads, "Compute threads (0 = all cores)")
      ->capture_default_str()
      ->check(kNonNegative);
  cmd->add_option("--precision", precision,
                  "Encoder dense layers on the CPU: fp32; int8 (BERT family: int8 weights, activations quantized "
                  "per row; faster, keys within about 0.01 in cosine); or bf16 (BERT family: bfloat16 products "
                  "accumulated in fp32; fastest where the CPU has AVX-512 BF16 or AMX)")
      ->capture_default_str()
      ->check(CLI::IsMember({"fp32", "int8", "bf16"}));
  cmd->add_option("--engine", engine,
                  "The encoder's CPU forward pass: torch (libtorch's modules, every family), native (sieve's own "
                  "pass for the BERT family: BERT, RoBERTa / XLM-R, MPNet; no per-operation dispatch; the same keys "
                  "within float rounding), or auto "
                  "(native where it runs, else torch)")
      ->capture_default_str()
      ->check(CLI::IsMember({"torch", "native", "auto"}));
}

EncoderOptions DeviceFlags::options() const {
  EncoderOptions eo;
  eo.device = device;
  eo.threads = threads;
  eo.precision = precision_from_name(precision);
  eo.engine = engine_from_name(engine);
  return eo;
}

std::vector<std::string> split_list(const std::string& s, bool lower) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s + ",") {
    if (c == ',') {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else {
      cur += lower ? static_cast<char>(std::tolower(static_cast<unsigned char>(c))) : c;
    }
  }
  return out;
}

void TextSource::add_options(CLI::App* cmd) {
  cmd->add_option("texts", args, "Texts to process (default: one per line from --input or stdin)");
  cmd->add_option("-i,--input", input_file, "Read texts from FILE, one per line ('-' = stdin)");
}

std::vector<std::string> TextSource::read() const {
  if (!args.empty()) {
    SIEVE_THROW_IF_NOT(input_file.empty(), "give texts either as arguments or with --input, not both");
    return args;
  }
  std::vector<std::string> texts;
  auto read_lines = [&](std::istream& in) {
    std::string line;
    while (std::getline(in, line)) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      texts.push_back(line);
    }
  };
  if (!input_file.empty() && input_file != "-") {
    std::ifstream in(input_file, std::ios::binary);
    SIEVE_THROW_IF_NOT(in, "cannot open input file '" << input_file << "'");
    read_lines(in);
  } else {
    read_lines(std::cin);
  }
  return texts;
}

void append_float(std::string& out, float v) {
  if (!std::isfinite(v)) {
    out += "null";
    return;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.7g", static_cast<double>(v));
  out += buf;
}

void append_float_array(std::string& out, const float* v, size_t n) {
  out += '[';
  for (size_t i = 0; i < n; ++i) {
    if (i) out += ',';
    append_float(out, v[i]);
  }
  out += ']';
}

std::string json_quote(const std::string& s) {
  return nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

int run_guarded(const std::function<void()>& body) {
  try {
    body();
    return 0;
  } catch (const UsageError& e) {
    std::fprintf(stderr, "sieve: error: %s\n", e.what());
    return 2;
  } catch (const sieve::Error& e) {
    std::fprintf(stderr, "sieve: error: %s\n", e.what());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sieve: error: %s\n", e.what());
  }
  return 1;
}

Filter parse_filter_flag(const std::string& text) {
  try {
    return Filter::parse(text);
  } catch (const Error& e) {
    throw UsageError(std::string("--filter: ") + e.what());
  }
}

void on_run(CLI::App* cmd, std::function<void()> body) {
  cmd->callback([body = std::move(body)]() {
    int rc = run_guarded(body);
    if (rc != 0) throw CLI::RuntimeError(rc);
  });
}

void apply_search_flags(const CLI::App& cmd, const SearchRecommendation& rec, const std::string& mode,
                        const std::string& fusion, SearchParams& p) {
  const SearchParams given = p;
  rec.apply(p);
  auto given_flag = [&](const char* name) {
    const CLI::Option* opt = cmd.get_option_no_throw(name);
    return opt != nullptr && opt->count() > 0;
  };
  if (given_flag("--rrf-k")) p.rrf_k = given.rrf_k;
  if (given_flag("--dense-weight")) p.dense_weight = given.dense_weight;
  if (given_flag("--weight-slope")) p.weight_slope = given.weight_slope;
  if (given_flag("--fusion-depth")) p.depth = given.depth;
  if (!fusion.empty()) p.fusion = fusion_from_name(fusion);
  if (!mode.empty()) {
    p.mode = search_mode_from_name(mode);
  } else if (rec.declared) {
    auto num = [](double v) {
      std::ostringstream o;
      o << v;
      return o.str();
    };
    std::string what = std::string("search: mode ") + search_mode_name(p.mode);
    if (p.mode == SearchMode::Hybrid)
      what += (fusion_uses_weight(p.fusion) ? std::string(" (") + fusion_name(p.fusion) + " fusion, dense weight " + num(p.dense_weight) +
                                                      (p.weight_slope != 0 ? " + " + num(p.weight_slope) + " x top-z gap" : std::string())
                                            : " (RRF, k " + num(p.rrf_k)) +
              (p.depth > 0 ? ", depth " + std::to_string(p.depth) : std::string()) + ")";
    log_info(what + ", as the model recommends (--mode overrides)");
  }
  // Knobs of a fusion that does not run are said to be ignored rather than silently dropped.
  const bool hybrid = p.mode == SearchMode::Hybrid;
  auto ignored = [&](const char* flag, bool applies, const char* where) {
    if (given_flag(flag) && !applies)
      log_warn(std::string(flag) + " applies only to " + where + "; ignored with mode " + search_mode_name(p.mode) +
               (hybrid ? std::string(" and ") + fusion_name(p.fusion) + " fusion" : ""));
  };
  ignored("--dense-weight", hybrid && fusion_uses_weight(p.fusion), "hybrid search with weighted or zscore fusion");
  ignored("--weight-slope", hybrid && fusion_uses_weight(p.fusion), "hybrid search with weighted or zscore fusion");
  ignored("--rrf-k", hybrid && p.fusion == Fusion::Rrf, "hybrid search with rrf fusion");
  ignored("--fusion", hybrid, "hybrid search");
  ignored("--fusion-depth", hybrid, "hybrid search");
}

namespace {
int g_signal_pipe[2] = {-1, -1};
void on_signal_write(int sig) {
  const int saved = errno;
  if (::write(g_signal_pipe[1], &sig, sizeof sig) < 0) {
  }
  errno = saved;
}
}  // namespace

void serve_with_signals(const std::function<void()>& serve, const std::function<void(int)>& on_signal, bool hangup) {
  if (g_signal_pipe[0] < 0) SIEVE_THROW_IF_NOT(::pipe(g_signal_pipe) == 0, "cannot create a pipe for signal handling");
  struct sigaction sa {};
  sa.sa_handler = on_signal_write;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  if (hangup) sigaction(SIGHUP, &sa, nullptr);
  std::thread waiter([&] {
    while (true) {
      int sig = 0;
      if (::read(g_signal_pipe[0], &sig, sizeof sig) != static_cast<ssize_t>(sizeof sig) || sig == 0) return;
      on_signal(sig);
      if (sig != SIGHUP) return;
    }
  });
  std::exception_ptr failed;
  try {
    serve();
  } catch (...) {
    failed = std::current_exception();
  }
  const int zero = 0;  // wakes the waiter when no stopping signal came
  if (::write(g_signal_pipe[1], &zero, sizeof zero) < 0) std::perror("sieve");
  waiter.join();
  signal(SIGTERM, SIG_DFL);
  signal(SIGINT, SIG_DFL);
  if (hangup) signal(SIGHUP, SIG_DFL);
  if (failed) std::rethrow_exception(failed);
}

}  // namespace sieve::cli
