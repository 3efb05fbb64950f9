#include "train/trainable_encoder.h"

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/file_util.h"
#include "model/tensor_io.h"
#include "sieve/error.h"
#include "sieve/safetensors.h"

namespace sieve::train {

namespace fs = std::filesystem;

TrainableEncoder::TrainableEncoder(const std::string& model_dir, size_t max_length, const c10::Device& device,
                                   double dropout)
    : source_dir_(model_dir), device_(device) {
  info_ = read_model_info(model_dir);
  tokenizer_ = Tokenizer::from_model_dir(model_dir);
  max_length_ = max_length ? max_length : info_.max_seq_length;
  max_length_ = std::min<size_t>(max_length_, static_cast<size_t>(max_sequence_length(info_.config)));
  SIEVE_THROW_IF_NOT(max_length_ >= 2, "max_length must be at least 2");
  model_ = make_encoder_backbone(info_.config, dropout);
  auto weights = SafetensorsFile::open(info_.weights_path);
  model_->load_weights(*weights);
  model_->to(device_);
  model_->train();
}

std::vector<Encoding> TrainableEncoder::encode(const std::vector<std::string>& texts) const {
  EncodeOptions eo;
  eo.max_length = max_length_;
  std::vector<Encoding> enc;
  enc.reserve(texts.size());
  for (const auto& t : texts) enc.push_back(tokenizer_->encode(t, eo));
  return enc;
}

TokenBatch TrainableEncoder::pad(const std::vector<Encoding>& enc, const std::vector<size_t>& rows) const {
  size_t L = 1;
  for (size_t r : rows) L = std::max(L, enc[r].ids.size());
  const auto B = static_cast<int64_t>(rows.size());
  TokenBatch b;
  b.ids = at::full({B, static_cast<int64_t>(L)}, std::max<int32_t>(0, tokenizer_->special_tokens().pad), at::kLong);
  b.mask = at::zeros({B, static_cast<int64_t>(L)}, at::kLong);
  b.types = at::zeros({B, static_cast<int64_t>(L)}, at::kLong);
  auto* ip = b.ids.data_ptr<int64_t>();
  auto* mp = b.mask.data_ptr<int64_t>();
  auto* tp = b.types.data_ptr<int64_t>();
  for (int64_t i = 0; i < B; ++i) {
    const Encoding& e = enc[rows[static_cast<size_t>(i)]];
    for (size_t j = 0; j < e.ids.size(); ++j) {
      ip[i * static_cast<int64_t>(L) + static_cast<int64_t>(j)] = e.ids[j];
      mp[i * static_cast<int64_t>(L) + static_cast<int64_t>(j)] = 1;
      tp[i * static_cast<int64_t>(L) + static_cast<int64_t>(j)] = e.type_ids[j];
    }
  }
  b.ids = b.ids.to(device_);
  b.mask = b.mask.to(device_);
  b.types = b.types.to(device_);
  return b;
}

TokenBatch TrainableEncoder::tokenize(const std::vector<std::string>& texts) const {
  const std::vector<Encoding> enc = encode(texts);
  std::vector<size_t> rows(enc.size());
  for (size_t i = 0; i < rows.size(); ++i) rows[i] = i;
  return pad(enc, rows);
}

std::vector<size_t> length_buckets(const std::vector<size_t>& sorted_lengths, size_t chunk_cost) {
  // best[i]: least cost of the first i texts; a chunk of texts j..i-1 costs (i - j) * its longest
  // length (the padded tokens it computes) plus chunk_cost (one more pass through the network).
  const size_t n = sorted_lengths.size();
  std::vector<size_t> best(n + 1, 0), from(n + 1, 0);
  for (size_t i = 1; i <= n; ++i) {
    best[i] = SIZE_MAX;
    for (size_t j = 0; j < i; ++j) {
      const size_t c = best[j] + (i - j) * sorted_lengths[i - 1] + chunk_cost;
      if (c < best[i]) best[i] = c, from[i] = j;
    }
  }
  std::vector<size_t> ends;
  for (size_t i = n; i > 0; i = from[i]) ends.push_back(i);
  std::reverse(ends.begin(), ends.end());
  return ends;
}

at::Tensor TrainableEncoder::states(const TokenBatch& batch) {
  return model_->forward(batch.ids, batch.mask, batch.types);
}

at::Tensor TrainableEncoder::embed(const std::vector<std::string>& texts) {
  if (texts.empty()) return at::zeros({0, info_.config.hidden_size}, at::TensorOptions().device(device_));
  const std::vector<Encoding> enc = encode(texts);
  // Texts go through the network in chunks of similar length: a batch of short queries and
  // 128-token passages padded together would compute most of the queries' rows on padding.
  std::vector<size_t> order(enc.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return enc[a].ids.size() < enc[b].ids.size(); });
  std::vector<size_t> lengths;
  for (size_t i : order) lengths.push_back(enc[i].ids.size());
  std::vector<at::Tensor> parts;
  size_t begin = 0;
  for (size_t end : length_buckets(lengths, kChunkCost)) {
    const std::vector<size_t> rows(order.begin() + static_cast<long>(begin), order.begin() + static_cast<long>(end));
    TokenBatch b = pad(enc, rows);
    parts.push_back(pool_and_normalize(states(b), b.mask, info_.pooling));
    begin = end;
  }
  // Back to the callers' order: row order[k] of the result is row k of the sorted chunks.
  std::vector<int64_t> inverse(order.size());
  for (size_t k = 0; k < order.size(); ++k) inverse[order[k]] = static_cast<int64_t>(k);
  const at::Tensor sorted = parts.size() == 1 ? parts[0] : at::cat(parts);
  return sorted.index_select(0, at::tensor(inverse, at::kLong).to(device_));
}

void copy_model_files(const std::string& from, const std::string& to) {
  // The files that describe a model besides its weights (Hugging Face and sentence-transformers).
  for (const char* f : {"config.json", "vocab.txt", "tokenizer.json", "tokenizer_config.json",
                        "special_tokens_map.json", "modules.json", "sentence_bert_config.json",
                        "config_sentence_transformers.json", "sentencepiece.bpe.model", "spiece.model"}) {
    fs::path p = fs::path(from) / f;
    if (fs::is_regular_file(p)) fs::copy_file(p, fs::path(to) / f, fs::copy_options::overwrite_existing);
  }
  // Module folders named in modules.json (1_Pooling, 2_Normalize, ...).
  fs::path modules = fs::path(from) / "modules.json";
  if (!fs::is_regular_file(modules)) return;
  auto j = nlohmann::json::parse(read_file(modules.string()), nullptr, false);
  if (!j.is_array()) return;
  for (const auto& m : j) {
    std::string sub = m.is_object() ? m.value("path", "") : "";
    if (sub.empty() || sub.find("..") != std::string::npos) continue;
    fs::path src = fs::path(from) / sub;
    if (fs::is_directory(src))
      fs::copy(src, fs::path(to) / sub, fs::copy_options::recursive | fs::copy_options::overwrite_existing);
    else
      fs::create_directories(fs::path(to) / sub);  // e.g. 2_Normalize has no files
  }
}

void replace_dir(const std::string& staged, const std::string& dir) {
  std::error_code ec;
  const std::string old = dir + ".old";
  fs::remove_all(old, ec);
  if (fs::exists(dir)) fs::rename(dir, old);
  fs::rename(staged, dir);
  fs::remove_all(old, ec);
}

void TrainableEncoder::save(const std::string& dir, const std::vector<std::pair<std::string, at::Tensor>>& extra,
                            const std::string& prefix) const {
  const std::string staged = dir + ".partial";
  std::error_code ec;
  fs::remove_all(staged, ec);
  fs::create_directories(staged);
  copy_model_files(source_dir_, staged);
  std::vector<std::pair<std::string, at::Tensor>> named;
  for (const auto& p : model_->named_parameters()) named.emplace_back(prefix + p.key(), p.value());
  for (const auto& e : extra) named.push_back(e);
  write_tensors(path_join(staged, "model.safetensors"), named, {{"format", "pt"}});
  replace_dir(staged, dir);
}

}  // namespace sieve::train
