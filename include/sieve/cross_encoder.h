// sieve: the cross-encoder, a verifier that reads texts: BERT for sequence classification over
// the pair "[CLS] query [SEP] candidate [SEP]" (Hugging Face's BertForSequenceClassification
// with one label; what sentence-transformers' CrossEncoder runs).
#pragma once

#include <chrono>
#include <cmath>
#include <cstddef>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sieve/tokenizer.h"

namespace sieve {

/// Load-time options of a cross-encoder.
struct CrossEncoderOptions {
  std::string device = "cpu";  ///< "cpu", "cuda" or "cuda:N"
  int threads = 0;             ///< > 0: set_compute_threads(threads) at load (process-wide); 0 = keep
  /// Token cap of a pair, specials included; 0 = as CrossEncoder(dir): tokenizer_config.json's
  /// model_max_length (512 when absent), at most the model's positions.
  size_t max_length = 0;
};

/// A calibrated combination of the two tiers (scripts/fit-tiers.py, stored with a cascade's band):
/// a logistic over the standardised logits of both scores, p = sigma(bias + w_fast * z_fast +
/// w_cross * z_cross) with z = (logit(score) - mean) / scale (scores clamped to [1e-6, 1 - 1e-6]
/// first), and its own gate threshold on p. `valid()` false: none.
struct TierCombination {
  double mean_fast = 0, scale_fast = 1, mean_cross = 0, scale_cross = 1;
  double w_fast = 0, w_cross = 0, bias = 0;
  double threshold = std::numeric_limits<double>::quiet_NaN();
  bool valid() const;
  /// p for one pair's two scores.
  float score(float fast, float cross) const;
};

/// The combination scripts/fit-tiers.py writes (JSON with the fields above; other keys ignored);
/// sieve::Error naming the file and the field when it is not one.
TierCombination read_tier_combination(const std::string& path);

/// The sieve file of a cross-encoder folder (DIR/sieve_cross_encoder.json, format
/// "sieve-cross-encoder", version 4; docs/formats.md): where it came from and its gate threshold.
struct CrossEncoderMeta {
  std::string base_encoder;   ///< the folder it was trained from ("" when unknown)
  std::string base_identity;  ///< model_identity() of that folder ("" when unknown)
  double threshold = std::numeric_limits<double>::quiet_NaN();  ///< gate threshold on score(); NaN = none
  /// SHA-256 of the folder's model.safetensors when the file was written: the weights the record
  /// (and its threshold) belong to. "" in version 1 files and before any weights exist.
  std::string weights_sha256;
  /// The cascade band (version 3, `sieve verify calibrate --verifier cascade:DIR`): the fast
  /// verifier's scores in [cascade_low, cascade_high] are sent to this cross-encoder (low > high:
  /// calibrated to send nothing). NaN = none.
  double cascade_low = std::numeric_limits<double>::quiet_NaN();
  double cascade_high = std::numeric_limits<double>::quiet_NaN();
  /// SHA-256 of the fast verifier file the band was calibrated with ("" = none): a band holds
  /// only for that verifier, and for these weights and this threshold.
  std::string cascade_fast_sha256;
  /// What the calibration measured on its pairs (NaN = unknown): the share of pairs sent, and the
  /// ROC-AUC of the fast tier, of this cross-encoder and of the cascade.
  double cascade_sent = std::numeric_limits<double>::quiet_NaN();
  double cascade_auc_fast = std::numeric_limits<double>::quiet_NaN();
  double cascade_auc_cross = std::numeric_limits<double>::quiet_NaN();
  double cascade_auc = std::numeric_limits<double>::quiet_NaN();
  /// The band's combination of both tiers (version 4; scripts/fit-tiers.py, recorded by
  /// `sieve verify calibrate --verifier cascade:DIR --combination FILE`): the band's pairs are scored
  /// by it. Invalid: by this cross-encoder alone.
  TierCombination cascade_combination;
  bool has_cascade() const {
    return !cascade_fast_sha256.empty() && std::isfinite(cascade_low) && std::isfinite(cascade_high);
  }
};
/// The sieve file's name inside a cross-encoder folder.
constexpr const char* kCrossEncoderMetaFile = "sieve_cross_encoder.json";
/// Reads DIR's sieve file; defaults when the folder has none; sieve::Error when it is malformed,
/// fails its checksum (version 2: "crc32" over the compact dump of the rest), or is of another
/// format or a newer version.
CrossEncoderMeta read_cross_encoder_meta(const std::string& dir);
/// Writes DIR's sieve file atomically (version 2), recording the SHA-256 of DIR/model.safetensors
/// when it exists (meta.weights_sha256 is ignored) and a checksum. CrossEncoder::load keeps the
/// threshold only while the weights are still those: other weights load without one, with a
/// warning to calibrate again.
void write_cross_encoder_meta(const std::string& dir, const CrossEncoderMeta& meta);
/// True when DIR/config.json names a *ForSequenceClassification architecture.
bool is_cross_encoder_dir(const std::string& dir);

/// A loaded cross-encoder. Immutable after load; every method may be called from several threads.
class CrossEncoder {
 public:
  virtual ~CrossEncoder() = default;
  /// The folder it was loaded from.
  virtual const std::string& dir() const = 0;
  /// Token cap of a pair (longer pairs are cut longest-first).
  virtual size_t max_length() const = 0;
  virtual const Tokenizer& tokenizer() const = 0;
  /// Number of weights (backbone, pooler and classifier).
  virtual size_t parameter_count() const = 0;
  /// The folder's sieve file (threshold NaN when uncalibrated).
  virtual const CrossEncoderMeta& meta() const = 0;
  /// The classifier's logit of each (first, second) pair, in input order; pairs are sorted by
  /// length and run `batch_size` at a time.
  virtual std::vector<float> logits(const std::vector<std::pair<std::string, std::string>>& pairs,
                                    size_t batch_size = 32) const = 0;
  /// sigmoid(logit) of each pair: what CrossEncoder.predict returns for one label. Higher = more
  /// likely the same meaning.
  std::vector<float> score_pairs(const std::vector<std::pair<std::string, std::string>>& pairs,
                                 size_t batch_size = 32) const;
  /// score_pairs of (query, candidate_i): one score per candidate.
  std::vector<float> score(const std::string& query, const std::vector<std::string>& candidates,
                           size_t batch_size = 32) const;
  /// logits() within a deadline: `batch_size` pairs at a time, in input order, while `deadline`
  /// has not passed; nullopt when it passes before every pair is scored (the rest is not run).
  /// A deadline of time_point::max() is one logits() call (the same numbers as logits()).
  std::optional<std::vector<float>> logits_until(const std::vector<std::pair<std::string, std::string>>& pairs,
                                                 std::chrono::steady_clock::time_point deadline,
                                                 size_t batch_size = 8) const;
  /// sigmoid of logits_until.
  std::optional<std::vector<float>> score_pairs_until(const std::vector<std::pair<std::string, std::string>>& pairs,
                                                      std::chrono::steady_clock::time_point deadline,
                                                      size_t batch_size = 8) const;
  /// The gate threshold of the sieve file (NaN when uncalibrated).
  double threshold() const { return meta().threshold; }

  /// Loads a folder in Hugging Face's BertForSequenceClassification layout (config.json,
  /// model.safetensors, tokenizer files) with one label; sieve::Error naming the file or tensor
  /// at fault (an encoder folder without a classifier is refused).
  static std::unique_ptr<CrossEncoder> load(const std::string& dir, const CrossEncoderOptions& opt = {});
};

/// sigmoid of each logit, in float as PyTorch computes it.
std::vector<float> sigmoid_scores(const std::vector<float>& logits);

}  // namespace sieve
