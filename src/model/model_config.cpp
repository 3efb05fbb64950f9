#include <nlohmann/json.hpp>

#include "core/file_util.h"
#include "sieve/error.h"
#include "sieve/model.h"

namespace sieve {

using nlohmann::json;

Pooling pooling_from_name(const std::string& name) {
  if (name == "cls") return Pooling::Cls;
  if (name == "mean") return Pooling::Mean;
  if (name == "last" || name == "lasttoken" || name == "last_token") return Pooling::LastToken;
  SIEVE_THROW("unknown pooling '" << name << "' (expected cls, mean or last)");
}

Precision precision_from_name(const std::string& name) {
  if (name == "fp32" || name == "float32") return Precision::Fp32;
  if (name == "int8") return Precision::Int8;
  if (name == "bf16" || name == "bfloat16") return Precision::Bf16;
  SIEVE_THROW("unknown precision '" << name << "' (expected fp32, int8 or bf16)");
}

const char* precision_name(Precision p) {
  switch (p) {
    case Precision::Fp32: return "fp32";
    case Precision::Int8: return "int8";
    case Precision::Bf16: return "bf16";
  }
  SIEVE_ASSERT(false);
}

Engine engine_from_name(const std::string& name) {
  if (name == "torch") return Engine::Torch;
  if (name == "native") return Engine::Native;
  if (name == "auto") return Engine::Auto;
  SIEVE_THROW("unknown engine '" << name << "' (expected torch, native or auto)");
}

const char* engine_name(Engine e) {
  switch (e) {
    case Engine::Torch: return "torch";
    case Engine::Native: return "native";
    case Engine::Auto: return "auto";
  }
  SIEVE_ASSERT(false);
}

const char* pooling_name(Pooling p) {
  switch (p) {
    case Pooling::Cls: return "cls";
    case Pooling::Mean: return "mean";
    case Pooling::LastToken: return "last";
  }
  SIEVE_ASSERT(false);
  return "";
}

namespace {

json parse_json(const std::string& text, const std::string& source) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  SIEVE_THROW_IF_NOT(!j.is_discarded(), source << ": not valid JSON");
  SIEVE_THROW_IF_NOT(j.is_object(), source << ": expected a JSON object");
  return j;
}

int64_t get_int(const json& j, const char* key, int64_t def, const std::string& source,
                int64_t min_value) {
  if (!j.contains(key) || j[key].is_null()) return def;
  SIEVE_THROW_IF_NOT(j[key].is_number_integer(), source << ": '" << key << "' must be an integer");
  int64_t v = j[key].get<int64_t>();
  SIEVE_THROW_IF_NOT(v >= min_value, source << ": '" << key << "' = " << v << " must be >= " << min_value);
  return v;
}

bool get_flag(const json& j, const char* key, bool def, const std::string& source) {
  if (!j.contains(key) || j[key].is_null()) return def;
  SIEVE_THROW_IF_NOT(j[key].is_boolean(), source << ": '" << key << "' must be true or false");
  return j[key].get<bool>();
}

// A string field that may be absent or null (then ""); of another type it is an error, not
// nlohmann's exception (modules.json's "type" and "path").
std::string get_string(const json& j, const char* key, const std::string& source) {
  if (!j.contains(key) || j[key].is_null()) return "";
  SIEVE_THROW_IF_NOT(j[key].is_string(), source << ": '" << key << "' must be a string");
  return j[key].get<std::string>();
}

double get_positive(const json& j, const char* key, double def, const std::string& source) {
  if (!j.contains(key) || j[key].is_null()) return def;
  SIEVE_THROW_IF_NOT(j[key].is_number() && j[key].get<double>() > 0, source << ": '" << key << "' must be a positive number");
  return j[key].get<double>();
}

// ModernBertConfig's own names and defaults (answerdotai/ModernBERT-base); the shared fields
// (hidden_size, ...) are read afterwards by the common code, norm_eps and hidden_activation here.
void read_modernbert_fields(const json& j, const std::string& source, BertConfig& c) {
  c.vocab_size = 50368;
  c.hidden_size = 768;
  c.intermediate_size = 1152;
  c.num_hidden_layers = 22;
  c.num_attention_heads = 12;
  c.max_position_embeddings = 8192;
  c.pad_token_id = 50283;
  c.type_vocab_size = 0;
  c.layer_norm_eps = get_positive(j, "norm_eps", 1e-5, source);
  c.norm_bias = get_flag(j, "norm_bias", false, source);
  c.attention_bias = get_flag(j, "attention_bias", false, source);
  c.mlp_bias = get_flag(j, "mlp_bias", false, source);
  c.global_rope_theta = get_positive(j, "global_rope_theta", 160000.0, source);
  c.local_rope_theta = get_positive(j, "local_rope_theta", c.global_rope_theta, source);
  c.global_attn_every_n_layers = get_int(j, "global_attn_every_n_layers", 3, source, 1);
  c.local_attention = get_int(j, "local_attention", 128, source, 0);
  c.hidden_act = "gelu";
  if (j.contains("hidden_activation")) {
    SIEVE_THROW_IF_NOT(j["hidden_activation"].is_string(), source << ": 'hidden_activation' must be a string");
    c.hidden_act = j["hidden_activation"].get<std::string>();
  }
}

}  // namespace

const char* supported_model_types() { return "bert, roberta, xlm-roberta, modernbert, mpnet"; }

bool uses_roberta_positions(const BertConfig& c) {
  return c.model_type == "roberta" || c.model_type == "xlm-roberta" || c.model_type == "mpnet";
}

int64_t max_sequence_length(const BertConfig& c) {
  return uses_roberta_positions(c) ? c.max_position_embeddings - c.pad_token_id - 1 : c.max_position_embeddings;
}

BertConfig parse_bert_config(const std::string& text, const std::string& source) {
  json j = parse_json(text, source);
  BertConfig c;
  if (j.contains("model_type")) {
    SIEVE_THROW_IF_NOT(j["model_type"].is_string(), source << ": 'model_type' must be a string");
    c.model_type = j["model_type"].get<std::string>();
  }
  const bool modern = c.model_type == "modernbert";
  SIEVE_THROW_IF_NOT(c.model_type == "bert" || uses_roberta_positions(c) || modern,
                     source << ": unsupported architecture model_type='" << c.model_type
                            << "'; sieve runs model_type " << supported_model_types());
  if (uses_roberta_positions(c)) {
    c.pad_token_id = 1;  // RoBERTa's <pad>, the padding_idx of its position table
    c.type_vocab_size = 1;
  }
  if (modern) read_modernbert_fields(j, source, c);
  if (c.model_type == "mpnet") {
    c.type_vocab_size = 0;  // MPNet has no token types
    c.relative_attention_num_buckets = get_int(j, "relative_attention_num_buckets", 32, source, 2);
  }
  c.vocab_size = get_int(j, "vocab_size", c.vocab_size, source, 1);
  c.hidden_size = get_int(j, "hidden_size", c.hidden_size, source, 1);
  c.num_hidden_layers = get_int(j, "num_hidden_layers", c.num_hidden_layers, source, 0);
  c.num_attention_heads = get_int(j, "num_attention_heads", c.num_attention_heads, source, 1);
  c.intermediate_size = get_int(j, "intermediate_size", c.intermediate_size, source, 1);
  c.max_position_embeddings = get_int(j, "max_position_embeddings", c.max_position_embeddings, source, 1);
  c.type_vocab_size = get_int(j, "type_vocab_size", c.type_vocab_size, source, 0);
  c.pad_token_id = get_int(j, "pad_token_id", c.pad_token_id, source, 0);
  if (j.contains("layer_norm_eps")) {
    SIEVE_THROW_IF_NOT(j["layer_norm_eps"].is_number(), source << ": 'layer_norm_eps' must be a number");
    c.layer_norm_eps = j["layer_norm_eps"].get<double>();
    SIEVE_THROW_IF_NOT(c.layer_norm_eps > 0, source << ": 'layer_norm_eps' must be positive");
  }
  if (j.contains("hidden_act")) {
    SIEVE_THROW_IF_NOT(j["hidden_act"].is_string(), source << ": 'hidden_act' must be a string");
    c.hidden_act = j["hidden_act"].get<std::string>();
  }
  SIEVE_THROW_IF_NOT(c.hidden_act == "gelu" || c.hidden_act == "gelu_new" ||
                         c.hidden_act == "gelu_pytorch_tanh" || c.hidden_act == "relu",
                     source << ": unsupported hidden_act '" << c.hidden_act
                            << "' (gelu, gelu_new, gelu_pytorch_tanh, relu)");
  if (j.contains("position_embedding_type") && j["position_embedding_type"].is_string()) {
    auto p = j["position_embedding_type"].get<std::string>();
    SIEVE_THROW_IF_NOT(p == "absolute", source << ": position_embedding_type '" << p
                                               << "' is not supported (only absolute)");
  }
  SIEVE_THROW_IF_NOT(c.hidden_size % c.num_attention_heads == 0,
                     source << ": hidden_size " << c.hidden_size << " is not a multiple of num_attention_heads "
                            << c.num_attention_heads);
  SIEVE_THROW_IF_NOT(max_sequence_length(c) >= 2,
                     source << ": max_position_embeddings " << c.max_position_embeddings
                            << " leaves no room for a sequence after RoBERTa's position offset (pad_token_id "
                            << c.pad_token_id << ")");
  return c;
}

namespace {
std::string modernbert_config_to_json(const BertConfig& c) {
  json j;
  j["architectures"] = json::array({"ModernBertModel"});
  j["model_type"] = c.model_type;
  j["vocab_size"] = c.vocab_size;
  j["hidden_size"] = c.hidden_size;
  j["num_hidden_layers"] = c.num_hidden_layers;
  j["num_attention_heads"] = c.num_attention_heads;
  j["intermediate_size"] = c.intermediate_size;
  j["hidden_activation"] = c.hidden_act;
  j["norm_eps"] = c.layer_norm_eps;
  j["norm_bias"] = c.norm_bias;
  j["attention_bias"] = c.attention_bias;
  j["mlp_bias"] = c.mlp_bias;
  j["global_rope_theta"] = c.global_rope_theta;
  j["local_rope_theta"] = c.local_rope_theta;
  j["global_attn_every_n_layers"] = c.global_attn_every_n_layers;
  j["local_attention"] = c.local_attention;
  j["max_position_embeddings"] = c.max_position_embeddings;
  j["pad_token_id"] = c.pad_token_id;
  j["embedding_dropout"] = 0.0;
  j["attention_dropout"] = 0.0;
  j["mlp_dropout"] = 0.0;
  j["initializer_range"] = 0.02;
  j["classifier_pooling"] = "mean";
  j["torch_dtype"] = "float32";
  return j.dump(2) + "\n";
}
}  // namespace

std::string bert_config_to_json(const BertConfig& c) {
  if (c.model_type == "modernbert") return modernbert_config_to_json(c);
  json j;
  const char* arch = c.model_type == "roberta"       ? "RobertaModel"
                     : c.model_type == "xlm-roberta" ? "XLMRobertaModel"
                     : c.model_type == "mpnet"       ? "MPNetModel"
                                                     : "BertModel";
  j["architectures"] = json::array({arch});
  j["model_type"] = c.model_type;
  j["vocab_size"] = c.vocab_size;
  j["hidden_size"] = c.hidden_size;
  j["num_hidden_layers"] = c.num_hidden_layers;
  j["num_attention_heads"] = c.num_attention_heads;
  j["intermediate_size"] = c.intermediate_size;
  j["hidden_act"] = c.hidden_act;
  j["hidden_dropout_prob"] = 0.1;
  j["attention_probs_dropout_prob"] = 0.1;
  j["layer_norm_eps"] = c.layer_norm_eps;
  j["max_position_embeddings"] = c.max_position_embeddings;
  j["type_vocab_size"] = c.type_vocab_size;
  j["pad_token_id"] = c.pad_token_id;
  if (uses_roberta_positions(c)) {
    j["bos_token_id"] = 0;
    j["eos_token_id"] = 2;
  }
  if (c.model_type == "mpnet") {
    j["relative_attention_num_buckets"] = c.relative_attention_num_buckets;
    j.erase("type_vocab_size");
    j.erase("position_embedding_type");
  }
  j["initializer_range"] = 0.02;
  j["position_embedding_type"] = "absolute";
  j["torch_dtype"] = "float32";
  return j.dump(2) + "\n";
}

ModelInfo read_model_info(const std::string& dir) {
  SIEVE_THROW_IF_NOT(is_dir(dir), "model directory not found: '" << dir << "'");
  ModelInfo info;
  info.dir = dir;
  std::string cfg_path = path_join(dir, "config.json");
  SIEVE_THROW_IF_NOT(is_file(cfg_path), "'" << dir << "' is not a model directory: config.json is missing");
  info.config = parse_bert_config(read_file(cfg_path), cfg_path);
  info.weights_path = path_join(dir, "model.safetensors");
  SIEVE_THROW_IF_NOT(is_file(info.weights_path),
                     "'" << dir << "': model.safetensors is missing (sieve reads safetensors weights only; "
                         "convert pytorch_model.bin with Hugging Face's save_pretrained(safe_serialization=True))");
  info.max_seq_length = static_cast<size_t>(max_sequence_length(info.config));

  // sentence-transformers: the pooling module's folder comes from modules.json when present.
  std::string pooling_dir = path_join(dir, "1_Pooling");
  std::string modules_path = path_join(dir, "modules.json");
  if (is_file(modules_path)) {
    json m = json::parse(read_file(modules_path), nullptr, false);
    SIEVE_THROW_IF_NOT(!m.is_discarded() && m.is_array(), modules_path << ": expected a JSON array of modules");
    for (const auto& mod : m) {
      SIEVE_THROW_IF_NOT(mod.is_object(), modules_path << ": each module must be an object");
      std::string type = get_string(mod, "type", modules_path);
      std::string path = get_string(mod, "path", modules_path);
      if (type.find("Pooling") != std::string::npos && !path.empty()) pooling_dir = path_join(dir, path);
      if (type.find("Normalize") != std::string::npos) info.normalize_module = true;
    }
  }
  std::string pooling_cfg = path_join(pooling_dir, "config.json");
  if (is_file(pooling_cfg)) {
    json p = parse_json(read_file(pooling_cfg), pooling_cfg);
    int modes = 0;
    auto mode = [&](const char* key) { return get_flag(p, key, false, pooling_cfg); };
    if (mode("pooling_mode_cls_token")) { info.pooling = Pooling::Cls; ++modes; }
    if (mode("pooling_mode_mean_tokens")) { info.pooling = Pooling::Mean; ++modes; }
    if (mode("pooling_mode_lasttoken")) { info.pooling = Pooling::LastToken; ++modes; }
    SIEVE_THROW_IF_NOT(!mode("pooling_mode_max_tokens") && !mode("pooling_mode_mean_sqrt_len_tokens"),
                       pooling_cfg << ": max and mean_sqrt_len pooling are not supported (cls, mean, last)");
    SIEVE_THROW_IF_NOT(modes == 1, pooling_cfg << ": expected exactly one of pooling_mode_cls_token, "
                                                  "pooling_mode_mean_tokens, pooling_mode_lasttoken");
    info.pooling_from_files = true;
  }
  std::string sbert_cfg = path_join(dir, "sentence_bert_config.json");
  if (is_file(sbert_cfg)) {
    json s = parse_json(read_file(sbert_cfg), sbert_cfg);
    if (s.contains("max_seq_length") && s["max_seq_length"].is_number_integer()) {
      int64_t v = s["max_seq_length"].get<int64_t>();
      SIEVE_THROW_IF_NOT(v >= 2, sbert_cfg << ": max_seq_length must be >= 2");
      info.max_seq_length = std::min<size_t>(static_cast<size_t>(v), info.max_seq_length);
    }
  }
  return info;
}

}  // namespace sieve
