// `sieve embed` and `sieve similarity`: pooled unit keys (and token states) of texts.
#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli/cli_common.h"
#include "sieve/model.h"
#include "sieve/encoder.h"
#include "sieve/error.h"

namespace sieve::cli {
namespace {

struct EncoderFlags {
  std::string model;
  std::string pooling;
  DeviceFlags dev;
  size_t batch_size = 32;
  size_t max_length = 0;

  void add(CLI::App* cmd) {
    cmd->add_option("-m,--model", model, std::string("Model directory or installed name (Hugging Face layout; default: ") + kDefaultModel + ")");
    cmd->add_option("--pooling", pooling, "Override the model's pooling: cls, mean or last")
        ->check(CLI::IsMember({"cls", "mean", "last"}));
    dev.add(cmd);
    cmd->add_option("--batch-size", batch_size, "Texts per forward pass")
        ->capture_default_str()
        ->check(kPositive);
    cmd->add_option("--max-length", max_length,
                    "Token cap incl. specials (default: the model's max_seq_length)");
  }
  /// The encoder; with `ids_only` without a tokenizer (the ids are used as given).
  std::unique_ptr<Encoder> load(bool ids_only = false) const {
    EncoderOptions eo = dev.options();
    eo.load_tokenizer = !ids_only;
    eo.max_length = max_length;
    if (!pooling.empty()) eo.pooling = pooling_from_name(pooling);
    return Encoder::load(resolve_model_dir(model), eo);
  }
  /// Loads the encoder and encodes `texts` with these flags.
  Embeddings encode(const std::vector<std::string>& texts, bool token_states) const {
    EncodeCall call;
    call.batch_size = batch_size;
    call.token_states = token_states;
    return load()->encode(texts, call);
  }
};

// `{"ids": [101, 7592, 102]}` per input line (blank lines skipped) -> the id lists.
std::vector<std::vector<int32_t>> parse_id_lines(const std::vector<std::string>& lines) {
  std::vector<std::vector<int32_t>> out;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].find_first_not_of(" \t\r") == std::string::npos) continue;
    try {
      const nlohmann::json j = nlohmann::json::parse(lines[i]);
      SIEVE_THROW_IF_NOT(j.is_object() && j.contains("ids") && j.at("ids").is_array(),
                         "input line " << i + 1 << ": expected {\"ids\": [...]}");
      std::vector<int32_t> ids;
      for (const auto& v : j.at("ids")) {
        SIEVE_THROW_IF_NOT(v.is_number_integer(), "input line " << i + 1 << ": ids must be integers, got " << v.dump());
        const auto id = v.get<int64_t>();
        SIEVE_THROW_IF_NOT(id >= 0 && id <= INT32_MAX, "input line " << i + 1 << ": token id " << id << " is out of range");
        ids.push_back(static_cast<int32_t>(id));
      }
      out.push_back(std::move(ids));
    } catch (const nlohmann::json::exception& e) {
      SIEVE_THROW("input line " << i + 1 << ": not JSON: " << e.what());
    }
  }
  return out;
}

}  // namespace

void register_embed(CLI::App& app) {
  struct Opts {
    EncoderFlags enc;
    bool tokens = false, ids = false;
    TextSource src;
  };
  auto o = std::make_shared<Opts>();
  auto* cmd =
      app.add_subcommand("embed", "Embed texts: one JSON line per text with its unit key (and token states)");
  o->enc.add(cmd);
  cmd->add_flag("--tokens", o->tokens, "Also write the final-layer token states (\"tokens\": [[...], ...])");
  cmd->add_flag("--ids", o->ids,
                "Inputs are pre-tokenized JSON lines {\"ids\": [...]}: vocabulary ids used exactly as given (special "
                "tokens included, no truncation)");
  o->src.add_options(cmd);
  on_run(cmd, [o] {
    auto texts = o->src.read();
    Embeddings e;
    size_t n = texts.size();
    if (o->ids) {
      const auto ids = parse_id_lines(texts);
      n = ids.size();
      EncodeCall call;
      call.batch_size = o->enc.batch_size;
      call.token_states = o->tokens;
      e = o->enc.load(/*ids_only=*/true)->encode_ids(ids, call);
    } else {
      e = o->enc.encode(texts, o->tokens);
    }
    std::string line;
    for (size_t i = 0; i < n; ++i) {
      line = "{\"embedding\":";
      append_float_array(line, &e.pooled[i * e.dim], e.dim);
      if (o->tokens) {
        line += ",\"tokens\":[";
        const TokenStates& ts = e.tokens[i];
        for (size_t t = 0; t < ts.length; ++t) {
          if (t) line += ',';
          append_float_array(line, &ts.values[t * e.dim], e.dim);
        }
        line += ']';
      }
      line += "}\n";
      std::fwrite(line.data(), 1, line.size(), stdout);
    }
  });
}

void register_similarity(CLI::App& app) {
  struct Opts {
    EncoderFlags enc;
    TextSource src;
  };
  auto o = std::make_shared<Opts>();
  auto* cmd =
      app.add_subcommand("similarity", "Print the pooled cosine similarity of every pair of texts (TSV)");
  o->enc.add(cmd);
  o->src.add_options(cmd);
  on_run(cmd, [o] {
    auto texts = o->src.read();
    if (texts.size() < 2)
      throw UsageError("similarity compares texts pairwise: give at least two (got " + std::to_string(texts.size()) +
                       "); see sieve similarity --help");
    Embeddings e = o->enc.encode(texts, false);
    std::printf("i\tj\tcosine\ttext_i\ttext_j\n");
    for (size_t i = 0; i < texts.size(); ++i)
      for (size_t j = i + 1; j < texts.size(); ++j) {
        double dot = 0;
        for (size_t d = 0; d < e.dim; ++d) dot += double(e.pooled[i * e.dim + d]) * e.pooled[j * e.dim + d];
        std::printf("%zu\t%zu\t%.4f\t%s\t%s\n", i, j, dot, texts[i].c_str(), texts[j].c_str());
      }
  });
}

}  // namespace sieve::cli
