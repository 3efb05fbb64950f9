// Pooled-space analysis of two encoders (the paper's Model A vs Model B section): per category of
// pairs, the cosine under each model, the shift delta = cos_B - cos_A, and how often B separates
// the pair better (delta < -0.01) or worse (delta > 0.01).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "eval/pairs.h"
#include "eval/stats.h"
#include "sieve/encoder.h"

namespace sieve::experiment {

struct SpaceCategory {
  std::string category;
  size_t n = 0;
  eval::MeanStd a, b, delta;         ///< cos under A, under B, and cos_B - cos_A per pair
  size_t b_wins = 0, a_wins = 0, ties = 0;
  double b_win_rate = 0;             ///< b_wins / n
  eval::Histogram hist_a, hist_b;    ///< `bins` bins on [-1, 1]
};

struct SpaceEval {
  std::vector<SpaceCategory> categories;  ///< sorted by name
  SpaceCategory overall;  ///< the near-miss categories together (positive categories left out)
};

struct SpaceEvalOptions {
  double tie_band = 0.01;   ///< |delta| <= band is a tie (the authors' 0.01)
  size_t bins = 100;        ///< on [-1, 1]: 50 of them cover the authors' [0, 1] range
  /// Categories of paraphrase-like pairs: listed per category, but not in "overall" (a lower
  /// cosine is a loss there, not a win).
  std::vector<std::string> positive_categories = eval::default_positive_categories();
  size_t batch_size = 32;
  size_t max_pairs = 0;
  EncoderOptions encoder;
};

/// Pooled cosines of every pair under both models, summarised per category (category column, else
/// the label, else "all"; compared in lower case).
SpaceEval evaluate_space(const std::string& model_a, const std::string& model_b,
                         const std::vector<eval::SentencePair>& pairs, const SpaceEvalOptions& opt);

nlohmann::json space_json(const SpaceEval& s);
/// Perturbation | N | A | B | Delta | B wins (the paper's layout).
std::string space_markdown(const SpaceEval& s);
/// Writes OUT/space.json, OUT/space.md and the cosine histograms OUT/hist_<category>.svg and
/// OUT/hist_overall.svg (A and B overlaid).
void write_space_report(const SpaceEval& s, const std::string& out_dir);

/// Pooled cosines of the pairs under one model (encoded once per distinct text).
std::vector<double> pair_cosines(const std::string& model_dir, const std::vector<eval::SentencePair>& pairs,
                                 const EncoderOptions& enc, size_t batch_size);

}  // namespace sieve::experiment
