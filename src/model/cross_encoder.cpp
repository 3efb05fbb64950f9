// The cross-encoder (sieve/cross_encoder.h): BertClassifier behind the CrossEncoder interface, and
// the folder's sieve file.
#include "sieve/cross_encoder.h"

#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <numeric>

#include "core/checksum.h"
#include "core/file_util.h"
#include "core/log.h"
#include "model/bert_classifier.h"
#include "model/threads.h"
#include "sieve/encoder.h"
#include "sieve/error.h"
#include "sieve/safetensors.h"

namespace sieve {

namespace {

using nlohmann::json;

constexpr const char* kMetaFormat = "sieve-cross-encoder";
constexpr int kMetaVersion = 4;  // 2: crc32 and weights_sha256; 3: the cascade band; 4: its combination

class BertCrossEncoder final : public CrossEncoder {
 public:
  BertCrossEncoder(const std::string& dir, const CrossEncoderOptions& opt) : dir_(dir), device_(parse_device(opt.device)) {
    SIEVE_THROW_IF_NOT(is_dir(dir), "cross-encoder folder not found: '" << dir << "'");
    const std::string cfg_path = path_join(dir, "config.json");
    SIEVE_THROW_IF_NOT(is_file(cfg_path), "'" << dir << "' is not a model folder: config.json is missing");
    const std::string cfg_text = read_file(cfg_path);
    const int64_t labels = classifier_num_labels(cfg_text);
    SIEVE_THROW_IF_NOT(labels > 0, cfg_path << " is not a cross-encoder's (architectures names no "
                                              "*ForSequenceClassification); make one with `sieve train cross-encoder`");
    SIEVE_THROW_IF_NOT(labels == 1, cfg_path << ": " << labels << " labels; sieve's cross-encoder scores with one label");
    config_ = parse_bert_config(cfg_text, cfg_path);
    meta_ = read_cross_encoder_meta(dir);
    tokenizer_ = Tokenizer::from_model_dir(dir);
    SIEVE_THROW_IF_NOT(tokenizer_->vocab_size() <= static_cast<size_t>(config_.vocab_size),
                       dir << ": the tokenizer has " << tokenizer_->vocab_size() << " entries but config.json says vocab_size "
                           << config_.vocab_size);
    pad_id_ = std::max<int32_t>(0, tokenizer_->special_tokens().pad);
    max_length_ = opt.max_length ? std::min<size_t>(opt.max_length, static_cast<size_t>(max_sequence_length(config_)))
                                 : cross_encoder_max_length(dir, config_);
    SIEVE_THROW_IF_NOT(max_length_ >= 3, "max_length must be at least 3 (room for [CLS] and two [SEP])");
    if (opt.threads > 0)
      set_compute_threads(opt.threads);
    else
      ensure_compute_threads();
    ensure_fast_blas(nullptr);
    const std::string weights = path_join(dir, "model.safetensors");
    SIEVE_THROW_IF_NOT(is_file(weights), "'" << dir << "': model.safetensors is missing (sieve reads safetensors weights only)");
    if (!meta_.weights_sha256.empty() && !std::isnan(meta_.threshold) && sha256_file_hex(weights) != meta_.weights_sha256) {
      log_warn("'" + path_join(dir, kCrossEncoderMetaFile) + "' was written for other weights than '" + weights +
               "': its threshold is not used; calibrate again (sieve verify calibrate --verifier cross:" + dir + ")");
      meta_.threshold = std::numeric_limits<double>::quiet_NaN();
      meta_.cascade_fast_sha256.clear();  // the band was calibrated with that threshold
    }
    model_ = BertClassifier(config_, labels, /*dropout=*/0.0);
    auto file = SafetensorsFile::open(weights);
    const auto got = model_->load_weights(*file);
    SIEVE_THROW_IF_NOT(got.pooler && got.classifier,
                       weights << ": " << (got.pooler ? "classifier.weight/bias" : "bert.pooler.dense.weight/bias")
                               << " is missing (not a BertForSequenceClassification checkpoint)");
    model_->eval();
    model_->to(device_);
    model_->prepare_inference();
  }

  const std::string& dir() const override { return dir_; }
  size_t max_length() const override { return max_length_; }
  const Tokenizer& tokenizer() const override { return *tokenizer_; }
  const CrossEncoderMeta& meta() const override { return meta_; }
  size_t parameter_count() const override {
    size_t n = 0;
    for (const auto& p : model_->parameters()) n += static_cast<size_t>(p.numel());
    return n;
  }

  std::vector<float> logits(const std::vector<std::pair<std::string, std::string>>& pairs,
                            size_t batch_size) const override {
    SIEVE_THROW_IF_NOT(batch_size > 0, "batch size must be positive");
    const size_t n = pairs.size();
    std::vector<float> out(n, 0.f);
    // Longest first (by bytes: a cheap proxy of tokens), so each batch pads little.
    std::vector<size_t> order(n);
    std::iota(order.begin(), order.end(), size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return pairs[a].first.size() + pairs[a].second.size() > pairs[b].first.size() + pairs[b].second.size();
    });
    c10::InferenceMode guard;
    size_t truncated = 0;
    for (size_t start = 0; start < n; start += batch_size) {
      const size_t b = std::min(batch_size, n - start);
      std::vector<const std::pair<std::string, std::string>*> chunk(b);
      for (size_t r = 0; r < b; ++r) chunk[r] = &pairs[order[start + r]];
      PairBatch batch = encode_pair_batch(*tokenizer_, chunk, max_length_, pad_id_);
      truncated += batch.truncated;
      at::Tensor z = model_->forward(batch.ids.to(device_), batch.mask.to(device_), batch.types.to(device_));
      at::Tensor cpu = z.to(at::kCPU).to(at::kFloat).contiguous();
      const float* p = cpu.data_ptr<float>();
      for (size_t r = 0; r < b; ++r) out[order[start + r]] = p[r];
    }
    if (truncated > 0)
      log_warn_once("cross_encoder.truncate", std::to_string(truncated) + " pair(s) longer than " +
                                                  std::to_string(max_length_) + " tokens were truncated");
    return out;
  }

 private:
  std::string dir_;
  c10::Device device_;
  BertConfig config_;
  CrossEncoderMeta meta_;
  std::unique_ptr<Tokenizer> tokenizer_;
  int32_t pad_id_ = 0;
  size_t max_length_ = 512;
  mutable BertClassifier model_{nullptr};  // forward is not const in libtorch; inference only reads
};

}  // namespace

std::vector<float> sigmoid_scores(const std::vector<float>& logits) {
  std::vector<float> out(logits.size());
  for (size_t i = 0; i < logits.size(); ++i) out[i] = 1.0f / (1.0f + std::exp(-logits[i]));
  return out;
}

std::vector<float> CrossEncoder::score_pairs(const std::vector<std::pair<std::string, std::string>>& pairs,
                                             size_t batch_size) const {
  return sigmoid_scores(logits(pairs, batch_size));
}

std::optional<std::vector<float>> CrossEncoder::logits_until(
    const std::vector<std::pair<std::string, std::string>>& pairs, std::chrono::steady_clock::time_point deadline,
    size_t batch_size) const {
  using Clock = std::chrono::steady_clock;
  if (deadline == Clock::time_point::max()) return logits(pairs);
  SIEVE_THROW_IF_NOT(batch_size > 0, "the batch size must be positive");
  std::vector<float> out;
  out.reserve(pairs.size());
  for (size_t begin = 0; begin < pairs.size(); begin += batch_size) {
    if (Clock::now() >= deadline) return std::nullopt;
    const size_t end = std::min(pairs.size(), begin + batch_size);
    const std::vector<std::pair<std::string, std::string>> part(pairs.begin() + static_cast<std::ptrdiff_t>(begin),
                                                                 pairs.begin() + static_cast<std::ptrdiff_t>(end));
    const std::vector<float> got = logits(part, batch_size);
    out.insert(out.end(), got.begin(), got.end());
  }
  return out;
}

std::optional<std::vector<float>> CrossEncoder::score_pairs_until(
    const std::vector<std::pair<std::string, std::string>>& pairs, std::chrono::steady_clock::time_point deadline,
    size_t batch_size) const {
  auto l = logits_until(pairs, deadline, batch_size);
  if (!l) return std::nullopt;
  return sigmoid_scores(*l);
}

std::vector<float> CrossEncoder::score(const std::string& query, const std::vector<std::string>& candidates,
                                       size_t batch_size) const {
  std::vector<std::pair<std::string, std::string>> pairs;
  pairs.reserve(candidates.size());
  for (const auto& c : candidates) pairs.emplace_back(query, c);
  return score_pairs(pairs, batch_size);
}

std::unique_ptr<CrossEncoder> CrossEncoder::load(const std::string& dir, const CrossEncoderOptions& opt) {
  return std::make_unique<BertCrossEncoder>(dir, opt);
}

bool is_cross_encoder_dir(const std::string& dir) {
  const std::string cfg = path_join(dir, "config.json");
  return is_file(cfg) && classifier_num_labels(read_file(cfg)) > 0;
}

bool TierCombination::valid() const {
  return std::isfinite(threshold) && std::isfinite(mean_fast) && std::isfinite(mean_cross) &&
         std::isfinite(scale_fast) && std::isfinite(scale_cross) && scale_fast > 0 && scale_cross > 0 &&
         std::isfinite(w_fast) && std::isfinite(w_cross) && std::isfinite(bias);
}

float TierCombination::score(float fast, float cross) const {
  auto logit = [](double p) {
    p = std::clamp(p, 1e-6, 1 - 1e-6);
    return std::log(p / (1 - p));
  };
  const double t = bias + w_fast * (logit(fast) - mean_fast) / scale_fast + w_cross * (logit(cross) - mean_cross) / scale_cross;
  return static_cast<float>(1 / (1 + std::exp(-t)));
}

namespace {

// A combination's fields by their JSON names: the one list its reader and its writer use.
constexpr std::pair<const char*, double TierCombination::*> kCombinationFields[] = {
    {"mean_fast", &TierCombination::mean_fast}, {"scale_fast", &TierCombination::scale_fast},
    {"mean_cross", &TierCombination::mean_cross}, {"scale_cross", &TierCombination::scale_cross},
    {"w_fast", &TierCombination::w_fast},        {"w_cross", &TierCombination::w_cross},
    {"bias", &TierCombination::bias},            {"threshold", &TierCombination::threshold}};

// A combination's fields from a JSON object; sieve::Error naming `what` when one is missing or the
// whole is not a valid combination.
TierCombination combination_from_json(const json& k, const std::string& what) {
  SIEVE_THROW_IF_NOT(k.is_object(), what << " must be a JSON object");
  TierCombination t;
  for (const auto& [key, field] : kCombinationFields) {
    SIEVE_THROW_IF_NOT(k.contains(key) && k[key].is_number(), what << " needs a number '" << key << "'");
    t.*field = k[key].get<double>();
  }
  SIEVE_THROW_IF_NOT(t.valid() && t.threshold > 0 && t.threshold <= 1,
                     what << " is not a valid combination (finite weights, positive scales, a threshold in (0, 1])");
  return t;
}

}  // namespace

TierCombination read_tier_combination(const std::string& path) {
  const json j = json::parse(read_file(path), nullptr, false);
  SIEVE_THROW_IF_NOT(!j.is_discarded(), path << ": not JSON (a combination of scripts/fit-tiers.py)");
  return combination_from_json(j, path + " (a combination of scripts/fit-tiers.py)");
}

CrossEncoderMeta read_cross_encoder_meta(const std::string& dir) {
  CrossEncoderMeta m;
  const std::string path = path_join(dir, kCrossEncoderMetaFile);
  if (!is_file(path)) return m;
  json j = json::parse(read_file(path), nullptr, false);
  SIEVE_THROW_IF_NOT(j.is_object() && j.value("format", "") == kMetaFormat,
                     path << ": not a sieve cross-encoder file (format \"" << kMetaFormat << "\")");
  const int version = j.value("version", 0);
  SIEVE_THROW_IF_NOT(version >= 1 && version <= kMetaVersion,
                     path << ": version " << version << " is not supported (this sieve reads version " << kMetaVersion
                          << "); upgrade sieve");
  if (version >= 2) {
    SIEVE_THROW_IF_NOT(j.contains("crc32") && j["crc32"].is_string(), path << ": no checksum (damaged)");
    const std::string want = j["crc32"].get<std::string>();
    j.erase("crc32");
    const std::string dump = j.dump();
    SIEVE_THROW_IF_NOT(crc32_hex(crc32(dump.data(), dump.size())) == want, path << ": damaged (checksum mismatch)");
  }
  m.base_encoder = j.value("base_encoder", "");
  m.base_identity = j.value("base_identity", "");
  m.weights_sha256 = j.value("weights_sha256", "");
  if (j.contains("threshold") && j["threshold"].is_number()) m.threshold = j["threshold"].get<double>();
  if (j.contains("cascade") && j["cascade"].is_object()) {
    const json& c = j["cascade"];
    auto num = [&](const char* key) {
      return c.contains(key) && c[key].is_number() ? c[key].get<double>() : std::numeric_limits<double>::quiet_NaN();
    };
    m.cascade_fast_sha256 = c.value("fast_verifier_sha256", "");
    m.cascade_low = num("low");
    m.cascade_high = num("high");
    m.cascade_sent = num("dev_sent");
    m.cascade_auc_fast = num("dev_auc_fast");
    m.cascade_auc_cross = num("dev_auc_cross");
    m.cascade_auc = num("dev_auc_cascade");
    SIEVE_THROW_IF_NOT(!m.cascade_fast_sha256.empty() && std::isfinite(m.cascade_low) && std::isfinite(m.cascade_high),
                       path << ": the cascade record needs fast_verifier_sha256 and a finite low and high");
    if (c.contains("combine") && !c["combine"].is_null())
      m.cascade_combination = combination_from_json(c["combine"], path + ": the cascade's combine record");
  }
  return m;
}

void write_cross_encoder_meta(const std::string& dir, const CrossEncoderMeta& m) {
  json j = {{"format", kMetaFormat}, {"version", kMetaVersion}, {"base_encoder", m.base_encoder},
            {"base_identity", m.base_identity}};
  j["threshold"] = std::isnan(m.threshold) ? json(nullptr) : json(m.threshold);
  const std::string weights = path_join(dir, "model.safetensors");
  j["weights_sha256"] = is_file(weights) ? sha256_file_hex(weights) : std::string();
  if (m.has_cascade()) {
    auto num = [](double v) { return std::isnan(v) ? json(nullptr) : json(v); };
    j["cascade"] = {{"fast_verifier_sha256", m.cascade_fast_sha256}, {"low", m.cascade_low},
                    {"high", m.cascade_high},        {"dev_sent", num(m.cascade_sent)},
                    {"dev_auc_fast", num(m.cascade_auc_fast)}, {"dev_auc_cross", num(m.cascade_auc_cross)},
                    {"dev_auc_cascade", num(m.cascade_auc)}};
    if (m.cascade_combination.valid()) {
      json& k = j["cascade"]["combine"];
      for (const auto& [key, field] : kCombinationFields) k[key] = m.cascade_combination.*field;
    }
  }
  const std::string dump = j.dump();
  j["crc32"] = crc32_hex(crc32(dump.data(), dump.size()));
  write_file_atomic(path_join(dir, kCrossEncoderMetaFile), j.dump(2) + "\n");
}

}  // namespace sieve
