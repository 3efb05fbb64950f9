// `sieve make-fixture`: writes a random BERT in complete Hugging Face + sentence-transformers layout.
#include <cstdio>

#include "cli/cli_common.h"
#include "sieve/model.h"

namespace sieve::cli {

void register_make_fixture(CLI::App& app) {
  struct Opts {
    std::string out;
    FixtureModelOptions f;
    std::string pooling = "mean";
    int64_t vocab_size = 0;
  };
  auto o = std::make_shared<Opts>();
  o->f.config.hidden_size = 64;
  o->f.config.num_hidden_layers = 2;
  o->f.config.num_attention_heads = 4;
  o->f.config.intermediate_size = 128;
  o->f.config.max_position_embeddings = 128;
  auto* cmd = app.add_subcommand("make-fixture",
                                 "Write a random BERT model directory (for tests, benchmarks and the demo)");
  auto& c = o->f.config;
  cmd->add_option("-o,--out", o->out, "Output directory (created)")->required();
  cmd->add_option("--layers", c.num_hidden_layers, "Encoder layers")->capture_default_str();
  cmd->add_option("--hidden", c.hidden_size, "Hidden size")->capture_default_str();
  cmd->add_option("--heads", c.num_attention_heads, "Attention heads")->capture_default_str();
  cmd->add_option("--ffn", c.intermediate_size, "Intermediate (FFN) size")->capture_default_str();
  cmd->add_option("--max-positions", c.max_position_embeddings, "max_position_embeddings")
      ->capture_default_str();
  cmd->add_option("--max-seq-length", o->f.max_seq_length, "sentence-transformers max_seq_length")
      ->capture_default_str();
  cmd->add_option("--vocab-size", o->vocab_size, "Size of the built-in vocabulary (padded with [unusedN])");
  cmd->add_option("--vocab", o->f.vocab_file, "Use this vocab.txt instead of the built-in one");
  cmd->add_option("--act", c.hidden_act, "hidden_act: gelu, gelu_new, relu")->capture_default_str();
  cmd->add_option("--pooling", o->pooling, "cls, mean or last")
      ->capture_default_str()
      ->check(CLI::IsMember({"cls", "mean", "last"}));
  cmd->add_option("--seed", o->f.seed, "Random seed")->capture_default_str();
  cmd->add_option("--init-std", o->f.init_std, "Weight scale")->capture_default_str();
  cmd->add_flag("--bert-prefix", o->f.bert_prefix, "Store tensor names with the 'bert.' prefix");
  cmd->add_flag("--fp16", o->f.fp16, "Store weights as F16");
  on_run(cmd, [o] {
    o->f.pooling = pooling_from_name(o->pooling);
    o->f.config.vocab_size = o->vocab_size;
    write_fixture_model(o->out, o->f);
    std::fprintf(stderr, "sieve: wrote a random %lld-layer BERT (hidden %lld) to %s\n",
                 static_cast<long long>(o->f.config.num_hidden_layers),
                 static_cast<long long>(o->f.config.hidden_size), o->out.c_str());
  });
}

}  // namespace sieve::cli
