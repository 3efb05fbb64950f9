#include "model/bert_classifier.h"

#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "core/file_util.h"
#include "model/tensor_io.h"
#include "sieve/error.h"
#include "sieve/safetensors.h"

namespace sieve {

namespace {

using nlohmann::json;

// Python's str.strip() for the white space that matters here (ASCII and the common Unicode
// spaces are dropped by BERT's tokenizer anyway; this keeps offsets of inner text unchanged).
std::string_view strip(std::string_view s) {
  auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; };
  while (!s.empty() && space(s.front())) s.remove_prefix(1);
  while (!s.empty() && space(s.back())) s.remove_suffix(1);
  return s;
}

const TensorView* find_any(const SafetensorsFile& f, std::initializer_list<const char*> names) {
  for (const char* n : names)
    if (f.contains(n)) return &f.get(n);
  return nullptr;
}

}  // namespace

PairBatch encode_pair_batch(const Tokenizer& tokenizer,
                            const std::vector<const std::pair<std::string, std::string>*>& pairs, size_t max_length,
                            int64_t pad_id) {
  EncodeOptions eo;
  eo.max_length = max_length;
  std::vector<Encoding> enc;
  enc.reserve(pairs.size());
  PairBatch b;
  size_t L = 1;
  for (const auto* p : pairs) {
    enc.push_back(tokenizer.encode_pair(strip(p->first), strip(p->second), eo));
    if (enc.back().truncated) ++b.truncated;
    L = std::max(L, enc.back().ids.size());
  }
  const auto B = static_cast<int64_t>(pairs.size());
  b.ids = at::full({B, static_cast<int64_t>(L)}, pad_id, at::kLong);
  b.mask = at::zeros({B, static_cast<int64_t>(L)}, at::kLong);
  b.types = at::zeros({B, static_cast<int64_t>(L)}, at::kLong);
  auto* ip = b.ids.data_ptr<int64_t>();
  auto* mp = b.mask.data_ptr<int64_t>();
  auto* tp = b.types.data_ptr<int64_t>();
  for (int64_t r = 0; r < B; ++r) {
    const Encoding& e = enc[static_cast<size_t>(r)];
    for (size_t j = 0; j < e.ids.size(); ++j) {
      ip[r * static_cast<int64_t>(L) + static_cast<int64_t>(j)] = e.ids[j];
      mp[r * static_cast<int64_t>(L) + static_cast<int64_t>(j)] = 1;
      tp[r * static_cast<int64_t>(L) + static_cast<int64_t>(j)] = e.type_ids[j];
    }
  }
  return b;
}

size_t cross_encoder_max_length(const std::string& dir, const BertConfig& config) {
  size_t n = 512;  // transformers' tokenizers without model_max_length do not truncate; BERT has 512 positions
  const std::string tc = path_join(dir, "tokenizer_config.json");
  if (is_file(tc)) {
    json j = json::parse(read_file(tc), nullptr, false);
    if (j.is_object() && j.contains("model_max_length") && j["model_max_length"].is_number()) {
      const double d = j["model_max_length"].get<double>();
      if (std::isfinite(d) && d >= 2 && d < 1e7) n = static_cast<size_t>(d);
    }
  }
  return std::min<size_t>(n, static_cast<size_t>(max_sequence_length(config)));
}

BertClassifierImpl::BertClassifierImpl(const BertConfig& config, int64_t num_labels, double dropout)
    : dropout_(dropout) {
  SIEVE_THROW_IF_NOT(config.model_type == "bert", "a cross-encoder needs a BERT model (model_type 'bert'), not '"
                                                      << config.model_type << "'");
  SIEVE_THROW_IF_NOT(num_labels >= 1, "num_labels must be at least 1");
  BertOptions bo;
  bo.config = config;
  bo.dropout = dropout;
  bert = register_module("bert", BertModel(bo));
  pooler = register_module("pooler", torch::nn::Linear(config.hidden_size, config.hidden_size));
  classifier = register_module("classifier", torch::nn::Linear(config.hidden_size, num_labels));
}

at::Tensor BertClassifierImpl::forward(const at::Tensor& input_ids, const at::Tensor& attention_mask,
                                       const at::Tensor& token_type_ids) {
  at::Tensor states = bert->forward(input_ids, attention_mask, token_type_ids);
  at::Tensor pooled = at::tanh(pooler->forward(states.select(1, 0)));
  if (is_training() && dropout_ > 0) pooled = at::dropout(pooled, dropout_, true);
  return classifier->forward(pooled);
}

BertClassifierImpl::Loaded BertClassifierImpl::load_weights(const SafetensorsFile& file) {
  at::NoGradGuard no_grad;
  bert->load_weights(file);
  Loaded got;
  const TensorView* pw = find_any(file, {"bert.pooler.dense.weight", "pooler.dense.weight"});
  const TensorView* pb = find_any(file, {"bert.pooler.dense.bias", "pooler.dense.bias"});
  if (pw && pb) {
    copy_tensor(file, *pw, pooler->weight);
    copy_tensor(file, *pb, pooler->bias);
    got.pooler = true;
  }
  const TensorView* cw = find_any(file, {"classifier.weight"});
  const TensorView* cb = find_any(file, {"classifier.bias"});
  if (cw && cb) {
    SIEVE_THROW_IF_NOT(cw->shape.size() == 2 && cw->shape[0] == classifier->weight.size(0),
                       file.path() << ": classifier.weight has " << (cw->shape.empty() ? 0 : cw->shape[0])
                                   << " rows, the config says " << classifier->weight.size(0) << " labels");
    copy_tensor(file, *cw, classifier->weight);
    copy_tensor(file, *cb, classifier->bias);
    got.classifier = true;
  }
  return got;
}

void BertClassifierImpl::init_head(uint64_t seed, bool with_pooler, double init_std) {
  at::NoGradGuard no_grad;
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  auto init = [&](torch::nn::Linear& l) {
    at::Tensor w = at::empty(l->weight.sizes(), at::kFloat);
    w.normal_(0.0, init_std, gen);
    l->weight.copy_(w);
    l->bias.zero_();
  };
  if (with_pooler) init(pooler);
  init(classifier);
}

std::vector<std::pair<std::string, at::Tensor>> BertClassifierImpl::hf_tensors() const {
  std::vector<std::pair<std::string, at::Tensor>> out;
  for (const auto& p : bert->named_parameters()) out.emplace_back("bert." + p.key(), p.value());
  out.emplace_back("bert.pooler.dense.weight", pooler->weight);
  out.emplace_back("bert.pooler.dense.bias", pooler->bias);
  out.emplace_back("classifier.weight", classifier->weight);
  out.emplace_back("classifier.bias", classifier->bias);
  return out;
}

std::string classifier_config_json(const std::string& encoder_config_json, int64_t num_labels) {
  json j = json::parse(encoder_config_json, nullptr, false);
  SIEVE_THROW_IF_NOT(j.is_object(), "config.json: expected a JSON object");
  j["architectures"] = json::array({"BertForSequenceClassification"});
  json id2label = json::object(), label2id = json::object();
  for (int64_t i = 0; i < num_labels; ++i) {
    id2label[std::to_string(i)] = "LABEL_" + std::to_string(i);
    label2id["LABEL_" + std::to_string(i)] = i;
  }
  j["id2label"] = id2label;
  j["label2id"] = label2id;
  j.erase("num_labels");
  return j.dump(2) + "\n";
}

int64_t classifier_num_labels(const std::string& config_json_text) {
  json j = json::parse(config_json_text, nullptr, false);
  if (!j.is_object()) return 0;
  bool classifier = false;
  if (j.contains("architectures") && j["architectures"].is_array())
    for (const auto& a : j["architectures"]) {
      const std::string s = a.is_string() ? a.get<std::string>() : "";
      const std::string suffix = "ForSequenceClassification";
      if (s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0) classifier = true;
    }
  if (!classifier) return 0;
  if (j.contains("num_labels") && j["num_labels"].is_number_integer()) return j["num_labels"].get<int64_t>();
  if (j.contains("id2label") && j["id2label"].is_object()) return static_cast<int64_t>(j["id2label"].size());
  return 2;
}

}  // namespace sieve
