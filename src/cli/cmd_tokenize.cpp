// `sieve tokenize`: text -> ids, tokens and byte offsets, one JSON line per text.
#include <cstdio>
#include <iostream>

#include "cli/cli_common.h"
#include "sieve/model.h"
#include "sieve/tokenizer.h"

namespace sieve::cli {

void register_tokenize(CLI::App& app) {
  struct Opts {
    std::string model;
    std::string tokenizer;
    size_t max_length = 0;
    bool no_special = false;
    TextSource src;
  };
  auto o = std::make_shared<Opts>();
  auto* cmd = app.add_subcommand(
      "tokenize", "Tokenize texts with a model's tokenizer (JSON lines: ids, tokens, offsets)");
  cmd->add_option("-m,--model", o->model, std::string("Model directory or installed name (Hugging Face layout; default: ") + kDefaultModel + ")");
  cmd->add_option("--tokenizer", o->tokenizer,
                  "A Hugging Face tokenizer.json to use instead of a model's tokenizer")
      ->excludes(cmd->get_option("--model"));
  cmd->add_option("--max-length", o->max_length,
                  "Truncate to N tokens incl. specials (default: the model's)");
  cmd->add_flag("--no-special", o->no_special,
                "Do not add special tokens ([CLS]/[SEP], or the tokenizer.json post-processor's)");
  o->src.add_options(cmd);
  on_run(cmd, [o] {
    auto tok = o->tokenizer.empty() ? Tokenizer::from_model_dir(resolve_model_dir(o->model))
                                    : load_tokenizer_json(o->tokenizer);
    EncodeOptions eo;
    eo.max_length = o->max_length;
    eo.add_special_tokens = !o->no_special;
    size_t truncated = 0;
    std::string line;
    for (const auto& text : o->src.read()) {
      Encoding e = tok->encode(text, eo);
      truncated += e.truncated ? 1 : 0;
      line = "{\"ids\":[";
      for (size_t i = 0; i < e.ids.size(); ++i) line += (i ? "," : "") + std::to_string(e.ids[i]);
      line += "],\"tokens\":[";
      for (size_t i = 0; i < e.tokens.size(); ++i) line += (i ? "," : "") + json_quote(e.tokens[i]);
      line += "],\"offsets\":[";
      for (size_t i = 0; i < e.offsets.size(); ++i)
        line += (i ? ",[" : "[") + std::to_string(e.offsets[i].first) + "," +
                std::to_string(e.offsets[i].second) + "]";
      line += "]}\n";
      std::fwrite(line.data(), 1, line.size(), stdout);
    }
    if (truncated > 0)
      std::fprintf(stderr, "sieve: warning: %zu text(s) were truncated to the maximum length\n", truncated);
  });
}

}  // namespace sieve::cli
