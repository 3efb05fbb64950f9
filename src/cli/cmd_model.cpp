// `sieve make-fixture` (a random BERT in complete Hugging Face + sentence-transformers layout) and
// `sieve model export / check` (shipping a model folder: float16 weights and a checksummed manifest).
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "cli/cli_common.h"
#include "core/file_util.h"
#include "sieve/error.h"
#include "sieve/index.h"
#include "sieve/model.h"
#include "sieve/verify.h"

namespace sieve::cli {
namespace {

bool same_path(const std::string& a, const std::string& b) {
  std::error_code e1, e2;
  return std::filesystem::weakly_canonical(a, e1) == std::filesystem::weakly_canonical(b, e2) && !e1 && !e2;
}

}  // namespace

void register_make_fixture(CLI::App& app) {
  struct Opts {
    std::string out;
    FixtureModelOptions f;
    std::string pooling = "mean";
    int64_t vocab_size = 0;
    bool modern_bias = false;
  };
  auto o = std::make_shared<Opts>();
  o->f.config.hidden_size = 64;
  o->f.config.num_hidden_layers = 2;
  o->f.config.num_attention_heads = 4;
  o->f.config.intermediate_size = 128;
  o->f.config.max_position_embeddings = 128;
  o->f.config.local_attention = 16;
  o->f.config.global_attn_every_n_layers = 3;
  auto* cmd = app.add_subcommand("make-fixture",
                                 "Write a random encoder model directory (bert, roberta, xlm-roberta, modernbert, mpnet; for tests, benchmarks and the demo)");
  auto& c = o->f.config;
  cmd->add_option("-o,--out", o->out, "Output directory (created)")->required();
  cmd->add_option("--arch", c.model_type, std::string("model_type: ") + supported_model_types())
      ->capture_default_str()
      ->check(CLI::IsMember({"bert", "roberta", "xlm-roberta", "modernbert", "mpnet"}));
  cmd->add_option("--layers", c.num_hidden_layers, "Encoder layers")->capture_default_str()->check(kPositive);
  cmd->add_option("--hidden", c.hidden_size, "Hidden size")->capture_default_str();
  cmd->add_option("--heads", c.num_attention_heads, "Attention heads")->capture_default_str();
  cmd->add_option("--ffn", c.intermediate_size, "Intermediate (FFN) size")->capture_default_str();
  cmd->add_option("--max-positions", c.max_position_embeddings, "max_position_embeddings")
      ->capture_default_str();
  cmd->add_option("--max-seq-length", o->f.max_seq_length, "sentence-transformers max_seq_length")
      ->capture_default_str();
  cmd->add_option("--vocab-size", o->vocab_size, "Size of the built-in vocabulary (padded with [unusedN])");
  cmd->add_option("--vocab", o->f.vocab_file, "Use this vocab.txt instead of the built-in one");
  cmd->add_option("--act", c.hidden_act, "hidden_act")
      ->capture_default_str()
      ->check(CLI::IsMember({"gelu", "gelu_new", "gelu_pytorch_tanh", "relu"}));
  cmd->add_option("--pooling", o->pooling, "cls, mean or last")
      ->capture_default_str()
      ->check(CLI::IsMember({"cls", "mean", "last"}));
  cmd->add_option("--seed", o->f.seed, "Random seed")->capture_default_str();
  cmd->add_option("--init-std", o->f.init_std, "Weight scale")->capture_default_str();
  cmd->add_option("--local-attention", c.local_attention, "modernbert: sliding-window width of the local layers")
      ->capture_default_str();
  cmd->add_option("--global-every", c.global_attn_every_n_layers,
                  "modernbert: every Nth layer (from layer 0) attends globally")
      ->capture_default_str();
  cmd->add_flag("--modern-bias", o->modern_bias, "modernbert: norms and projections with biases (norm_bias, "
                                                 "attention_bias, mlp_bias; ModernBERT has none)");
  cmd->add_flag("--bert-prefix,--prefix", o->f.bert_prefix,
                "Store tensor names with the family's prefix ('bert.', 'roberta.', 'model.', 'mpnet.')");
  cmd->add_flag("--fp16", o->f.fp16, "Store weights as F16");
  on_run(cmd, [o] {
    o->f.pooling = pooling_from_name(o->pooling);
    o->f.config.vocab_size = o->vocab_size;
    if (o->f.config.model_type == "modernbert") {
      o->f.config.norm_bias = o->f.config.attention_bias = o->f.config.mlp_bias = o->modern_bias;
      o->f.config.layer_norm_eps = 1e-5;
    }
    write_fixture_model(o->out, o->f);
    std::fprintf(stderr, "sieve: wrote a random %lld-layer %s (hidden %lld) to %s\n",
                 static_cast<long long>(o->f.config.num_hidden_layers), o->f.config.model_type.c_str(),
                 static_cast<long long>(o->f.config.hidden_size), o->out.c_str());
  });
}

void register_model(CLI::App& app) {
  auto* group = app.add_subcommand("model", "Installed models by name; prepare model folders for shipping (float16 export, manifest checks)");
  group->require_subcommand(1);
  {
    struct Opts {
      bool json = false;
    };
    auto o = std::make_shared<Opts>();
    auto* cmd = group->add_subcommand(
        "list", "The installed models that --model accepts by name (name, family, dim, pooling, max length, folder, "
                "identity, shipped verifier); * marks the default");
    cmd->add_flag("--json", o->json, "One JSON object per model instead of a table");
    on_run(cmd, [o] {
      const std::string def = default_model_dir();
      const auto models = installed_models();
      if (!o->json)
        std::printf("default\tname\tfamily\tdim\tpooling\tmax_length\tverifier\tidentity\tfolder\n");
      for (const InstalledModel& m : models) {
        const bool is_default = !def.empty() && same_path(def, m.dir);
        std::string identity;
        if (m.problem.empty()) {
          try {
            identity = model_identity(m.dir);
          } catch (const Error&) {
            identity = "";
          }
        }
        if (o->json) {
          nlohmann::json j = {{"name", m.name},         {"default", is_default},
                              {"family", m.family},     {"dim", m.dim},
                              {"pooling", m.pooling},   {"max_length", m.max_seq_length},
                              {"folder", m.dir},        {"identity", identity},
                              {"verifier", m.verifier.empty() ? nlohmann::json(nullptr) : nlohmann::json(m.verifier)},
                              {"source", m.source_file.empty() ? nlohmann::json(nullptr) : nlohmann::json(m.source_file)}};
          if (!m.problem.empty()) j["problem"] = m.problem;
          std::printf("%s\n", j.dump().c_str());
        } else {
          std::printf("%s\t%s\t%s\t%lld\t%s\t%zu\t%s\t%s\t%s\n", is_default ? "*" : "", m.name.c_str(),
                      m.problem.empty() ? m.family.c_str() : "unreadable", static_cast<long long>(m.dim),
                      m.pooling.c_str(), m.max_seq_length, m.verifier.empty() ? "no" : "yes", identity.c_str(),
                      m.dir.c_str());
        }
      }
      SIEVE_THROW_IF_NOT(!models.empty(), "no models are installed (run scripts/setup.sh, or set SIEVE_MODELS)");
    });
  }
  {
    struct Opts {
      std::string in, out, verifier;
      ModelExportOptions e;
      bool fp32 = false, keep_head = false;
    };
    auto o = std::make_shared<Opts>();
    auto* cmd = group->add_subcommand(
        "export", "Copy a model folder with float16 weights, without the MLM head, and write its manifest.json");
    cmd->add_option("-m,--model,--in", o->in, "Model folder to export")->required();
    cmd->add_option("-o,--out", o->out, "New folder to write")->required();
    cmd->add_flag("--fp32", o->fp32, "Keep float32 weights");
    cmd->add_flag("--keep-mlm-head", o->keep_head, "Keep the cls.* (MLM head) tensors");
    cmd->add_option("--verifier", o->verifier,
                    "A verifier file of the --model encoder: stored as OUT/verifier.safetensors for the exported one");
    on_run(cmd, [o] {
      o->e.fp16 = !o->fp32;
      o->e.drop_mlm_head = !o->keep_head;
      // The verifier must belong to the source encoder; it is re-recorded for the exported copy.
      std::unique_ptr<Verifier> v;
      if (!o->verifier.empty()) v = load_verifier_for_model(o->verifier, o->in);
      export_model(o->in, o->out, o->e);
      if (v) {
        v->save_for_encoder(path_join(o->out, "verifier.safetensors"), model_identity(o->out));
        write_manifest(o->out);
      }
      std::printf("%s\n", nlohmann::json{{"written", o->out}, {"fp16", o->e.fp16}}.dump().c_str());
    });
  }
  {
    struct Opts {
      std::string source, model;
    };
    auto o = std::make_shared<Opts>();
    auto* cmd = group->add_subcommand(
        "install-cross-encoder",
        "Install a calibrated cross-encoder folder for a model (as MODEL_DIR/cross-encoder): the accurate tier of "
        "--gate-mode accurate|cascade, and of --gate when a band for the model's gate is recorded");
    cmd->add_option("dir", o->source, "The cross-encoder folder (sieve train cross-encoder, then verify calibrate)")
        ->required();
    cmd->add_option("-m,--model", o->model, std::string("Installed name or folder of the model (default: ") + kDefaultModel + ")");
    on_run(cmd, [o] {
      const CrossEncoderInstall r = install_cross_encoder(o->source, o->model);
      std::printf("%s\n", nlohmann::json{{"installed", r.dir}, {"threshold", r.threshold}, {"band", r.band},
                                          {"combined", r.combined}, {"replaced", r.replaced}}
                                .dump()
                                .c_str());
      if (!r.band)
        std::fprintf(stderr, "sieve: note: no cascade band for the model's gate is recorded: --gate stays the fast gate; "
                             "calibrate one (sieve verify calibrate --verifier cascade:%s --pairs DEV)\n",
                     r.dir.c_str());
    });
  }
  {
    struct Opts {
      std::string dir;
      bool write = false;
    };
    auto o = std::make_shared<Opts>();
    auto* cmd = group->add_subcommand("check", "Check a folder against its manifest.json (exit 1 on any difference)");
    cmd->add_option("dir", o->dir, "Model folder")->required();
    cmd->add_flag("--write", o->write, "Write (or rewrite) the manifest instead of checking it");
    on_run(cmd, [o] {
      if (o->write) {
        std::printf("%s\n", write_manifest(o->dir).dump(2).c_str());
        return;
      }
      const auto problems = check_manifest(o->dir);
      for (const auto& p : problems) std::fprintf(stderr, "sieve: %s\n", p.c_str());
      SIEVE_THROW_IF_NOT(problems.empty(), o->dir << " does not match its manifest (" << problems.size() << " problems)");
      std::printf("{\"ok\":true}\n");
    });
  }
}

}  // namespace sieve::cli
