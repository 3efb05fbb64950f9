// `sieve verify score|create|info`: run a verifier over sentence pairs, make a verifier file,
// describe one.
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli/cli_common.h"
#include "eval/pairs.h"
#include "sieve/error.h"
#include "sieve/index.h"
#include "sieve/verify.h"

namespace sieve::cli {
namespace {

nlohmann::json describe(const Verifier& v) {
  const VerifierConfig& c = v.config();
  nlohmann::json j = {{"kind", verifier_kind_name(c.kind)},
                      {"parameters", v.parameter_count()},
                      {"max_tokens", c.max_tokens},
                      {"encoder_dim", c.encoder_dim},
                      {"encoder_identity", c.encoder_identity},
                      {"penalty", c.penalty.enabled}};
  if (!std::isnan(c.threshold)) j["threshold"] = c.threshold;
  return j;
}

}  // namespace

void register_verify(CLI::App& app) {
  auto* group = app.add_subcommand("verify", "Stage 2 verifiers: score sentence pairs, create and inspect verifier files");
  group->require_subcommand(1);
  {
    struct Opts {
      std::string model, verifier = "F1", pairs;
      DeviceFlags dev;
      size_t batch_size = 32;
    };
    auto o = std::make_shared<Opts>();
    auto* cmd = group->add_subcommand(
        "score", "Score sentence pairs: one JSON line per pair, in input order, with a \"score\" field");
    cmd->add_option("-m,--model", o->model, "Encoder model directory")->required();
    cmd->add_option("--verifier", o->verifier,
                    "A verifier file, or by name: cosine (pooled stage-1 cosine), F0, F1, F2")
        ->capture_default_str();
    cmd->add_option("--pairs", o->pairs,
                    "TSV/CSV with a header: sentence1, sentence2[, category][, label]")
        ->required();
    cmd->add_option("--batch-size", o->batch_size, "Texts per forward pass")->capture_default_str()->check(CLI::PositiveNumber);
    o->dev.add(cmd);
    on_run(cmd, [o] {
      auto pairs = eval::read_pairs(o->pairs);
      const bool cosine = o->verifier == "cosine";
      std::unique_ptr<Verifier> verifier;
      if (!cosine) verifier = Verifier::load(o->verifier, model_identity(o->model));
      auto enc = Encoder::load(o->model, o->dev.options());
      std::vector<std::string> texts;
      for (const auto& p : pairs) {
        texts.push_back(p.sentence1);
        texts.push_back(p.sentence2);
      }
      EncodeCall call;
      call.batch_size = o->batch_size;
      call.token_states = !cosine;
      Embeddings e = enc->encode(texts, call);
      std::string out;
      for (size_t i = 0; i < pairs.size(); ++i) {
        float s;
        if (cosine) {
          double dot = 0;
          for (size_t h = 0; h < e.dim; ++h) dot += double(e.pooled[2 * i * e.dim + h]) * e.pooled[(2 * i + 1) * e.dim + h];
          s = static_cast<float>(dot);
        } else {
          s = verifier->score(e.tokens[2 * i], {&e.tokens[2 * i + 1]})[0];
        }
        out += "{\"score\":";
        append_float(out, s);
        if (!pairs[i].category.empty()) out += ",\"category\":" + json_quote(pairs[i].category);
        if (!pairs[i].label.empty()) out += ",\"label\":" + json_quote(pairs[i].label);
        out += "}\n";
        if (out.size() > (1u << 16)) {
          std::fwrite(out.data(), 1, out.size(), stdout);
          out.clear();
        }
      }
      std::fwrite(out.data(), 1, out.size(), stdout);
    });
  }
  {
    struct Opts {
      std::string kind = "F4", model, out;
      VerifierConfig c;
      uint64_t seed = 42;
    };
    auto o = std::make_shared<Opts>();
    auto* cmd = group->add_subcommand(
        "create", "Write a verifier file with fresh (random) weights for a model; training is `sieve train verifier`");
    cmd->add_option("--kind", o->kind, "F0, F1, F2, F3 or F4")->capture_default_str();
    cmd->add_option("-m,--model", o->model, "The encoder it verifies for (width and identity)")->required();
    cmd->add_option("-o,--out", o->out, "Verifier file to write (.safetensors)")->required();
    cmd->add_option("--seed", o->seed, "Initialisation seed")->capture_default_str();
    cmd->add_option("--max-tokens", o->c.max_tokens, "Tokens per side (map size)")->capture_default_str();
    cmd->add_option("--f2-lambda", o->c.f2.lambda, "F2 positional bias")->capture_default_str();
    cmd->add_option("--f2-tau", o->c.f2.tau, "F2 temperature")->capture_default_str();
    cmd->add_option("--f3-hidden", o->c.f3.hidden, "F3 channels of the first block")->capture_default_str();
    cmd->add_option("--f3-blocks", o->c.f3.blocks, "F3 conv blocks")->capture_default_str();
    cmd->add_option("--f4-width", o->c.f4.width, "F4 width (0 = the encoder's)")->capture_default_str();
    cmd->add_option("--f4-layers", o->c.f4.layers, "F4 encoder layers")->capture_default_str();
    cmd->add_option("--f4-heads", o->c.f4.heads, "F4 attention heads")->capture_default_str();
    cmd->add_option("--f4-ff", o->c.f4.ff, "F4 FFN width")->capture_default_str();
    cmd->add_flag("--penalty", o->c.penalty.enabled, "Score with the conditional penalty (base F1)");
    on_run(cmd, [o] {
      o->c.kind = verifier_kind_from_name(o->kind);
      ModelInfo info = read_model_info(o->model);
      o->c.encoder_dim = static_cast<size_t>(info.config.hidden_size);
      o->c.encoder_identity = model_identity(o->model);
      auto v = Verifier::create(o->c, o->seed);
      v->save(o->out);
      std::printf("%s\n", describe(*v).dump().c_str());
    });
  }
  {
    auto path = std::make_shared<std::string>();
    auto* cmd = group->add_subcommand("info", "Describe a verifier file (JSON)");
    cmd->add_option("verifier", *path, "Verifier file")->required();
    on_run(cmd, [path] { std::printf("%s\n", describe(*Verifier::load(*path)).dump(2).c_str()); });
  }
}

}  // namespace sieve::cli
