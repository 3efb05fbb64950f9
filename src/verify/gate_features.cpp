// The Mlp gate's features of a pair (gate_feature_names()): what the cosine map says (F0, F1,
// F2, its weakest rows, where each row aligns) beside what it cannot say (the pooled cosine, exact
// ids held, their order, the voice and the negation cues; questions, wh-words, numbers and
// opposite words).
#include "verify/gate_features.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <set>
#include <unordered_map>
#include <utility>

#include "core/omp_threads.h"
#include "sieve/error.h"
#include "verify/map_scores.h"

namespace sieve {
namespace verify {
namespace {

// The share of the reordered pairs of once-each ids (a before b in the query, after it in the
// candidate) that a conjunction found once on each side separates, with a before it and b after
// it in the query and the other way round in the candidate: a swapped coordination. 0 when no
// pair is reordered.
double conj_swap(const std::vector<int64_t>& q, const std::vector<int64_t>& c, const std::vector<int32_t>& conj_ids) {
  std::unordered_map<int64_t, int> qn, cn;
  for (int64_t id : q) ++qn[id];
  for (int64_t id : c) ++cn[id];
  std::unordered_map<int64_t, int64_t> cpos;
  for (size_t j = 0; j < c.size(); ++j) cpos[c[j]] = static_cast<int64_t>(j);
  std::vector<std::pair<int64_t, int64_t>> once;  // (query position, candidate position)
  std::vector<std::pair<int64_t, int64_t>> conj;
  for (size_t i = 0; i < q.size(); ++i) {
    if (qn[q[i]] != 1 || cn[q[i]] != 1) continue;
    const std::pair<int64_t, int64_t> at{static_cast<int64_t>(i), cpos[q[i]]};
    if (std::find(conj_ids.begin(), conj_ids.end(), q[i]) != conj_ids.end()) conj.push_back(at);
    else once.push_back(at);
  }
  size_t reordered = 0, separated = 0;
  for (size_t a = 0; a < once.size(); ++a)
    for (size_t b = a + 1; b < once.size(); ++b) {
      if (once[b].second > once[a].second) continue;  // query order kept (positions are distinct)
      ++reordered;
      separated += std::any_of(conj.begin(), conj.end(), [&](const std::pair<int64_t, int64_t>& k) {
        return once[a].first < k.first && k.first < once[b].first && once[b].second < k.second && k.second < once[a].second;
      });
    }
  return reordered == 0 ? 0.0 : static_cast<double>(separated) / static_cast<double>(reordered);
}

constexpr double kTau = 0.1;     // F2's temperature in both F2 features
constexpr double kLambda = 0.1;  // f2_pos's positional bias

// How many places of `ids` start a whole run of one of `cues` (is_cue's starts, counted).
double cue_count(const std::vector<int64_t>& ids, const CueSequences& cues) {
  double n = 0;
  for (size_t t = 0; t < ids.size(); ++t)
    for (const auto& run : cues)
      if (t + run.size() <= ids.size() && std::equal(run.begin(), run.end(), ids.begin() + static_cast<int64_t>(t))) {
        ++n;
        break;
      }
  return n;
}

// The features one direction reads from the map: rows are the query side. Element (i, j) is
// M[i * si + j * sj] and E[i * si + j * sj] = exp((M_ij - 1) / tau) (softmax is shift-invariant,
// so F2's weights are E over a row, times decay[|i - j|] = exp(-lambda |i - j| / tau) for f2_pos).
void map_features(const float* M, const float* E, int64_t rows, int64_t cols, int64_t si, int64_t sj,
                  const std::vector<double>& decay, std::vector<float>& row_max, float* f) {
  double f0 = 0, f1 = 0, f2 = 0, f2_pos = 0, displacement = 0;
  row_max.clear();
  for (int64_t i = 0; i < rows; ++i) {
    int64_t best = 0;
    double e_sum = 0, em_sum = 0, d_sum = 0, dm_sum = 0;
    for (int64_t j = 0; j < cols; ++j) {
      const double v = M[i * si + j * sj], e = E[i * si + j * sj], d = e * decay[static_cast<size_t>(std::abs(i - j))];
      f0 += v;
      if (v > M[i * si + best * sj]) best = j;
      e_sum += e;
      em_sum += e * v;
      d_sum += d;
      dm_sum += d * v;
    }
    const float top = M[i * si + best * sj];
    row_max.push_back(top);
    f1 += top;
    f2 += e_sum > 0 ? em_sum / e_sum : 0.0;
    f2_pos += d_sum > 0 ? dm_sum / d_sum : 0.0;
    const double ri = rows > 1 ? static_cast<double>(i) / static_cast<double>(rows - 1) : 0.0;
    const double rj = cols > 1 ? static_cast<double>(best) / static_cast<double>(cols - 1) : 0.0;
    displacement += std::fabs(ri - rj);
  }
  const auto r = static_cast<double>(rows);
  f[1] = static_cast<float>(f0 / (r * static_cast<double>(cols)));
  f[2] = static_cast<float>(f1 / r);
  f[3] = static_cast<float>(f2 / r);
  f[4] = static_cast<float>(f2_pos / r);
  std::sort(row_max.begin(), row_max.end());
  const size_t quarter = std::max<size_t>(1, (row_max.size() + 3) / 4);
  double low = 0;
  for (size_t k = 0; k < quarter; ++k) low += row_max[k];
  f[5] = row_max.front();
  f[6] = static_cast<float>(low / static_cast<double>(quarter));
  f[15] = static_cast<float>(displacement / r);
}

// The features the token ids give, one direction (q the query side).
void id_features(const std::vector<int64_t>& q, const std::vector<int64_t>& c, const MlpGateOptions& o, float* f) {
  const OrderFacts of = order_facts(q, c, o.voice_ids);
  f[7] = static_cast<float>(of.share);
  std::set<std::pair<int64_t, int64_t>> cand_bigrams;
  for (size_t j = 1; j < c.size(); ++j) cand_bigrams.emplace(c[j - 1], c[j]);
  size_t held = 0;
  for (size_t i = 1; i < q.size(); ++i) held += cand_bigrams.count({q[i - 1], q[i]});
  f[8] = q.size() > 1 ? static_cast<float>(static_cast<double>(held) / static_cast<double>(q.size() - 1)) : 0.f;
  f[9] = static_cast<float>(std::fabs(cue_count(q, o.cue_ids) - cue_count(c, o.cue_ids)));
  f[10] = of.crossed ? 1.f : 0.f;
  f[11] = of.voice ? 1.f : 0.f;
  f[12] = of.crossed != of.voice ? static_cast<float>(of.share * of.share) : 0.f;
  f[13] = static_cast<float>(of.discordant);
  f[14] = static_cast<float>(std::fabs(std::log(static_cast<double>(q.size()) / static_cast<double>(c.size()))));
  f[16] = static_cast<float>(conj_swap(q, c, o.conj_ids));
  // Issue 57: questions, their wh-words, numbers and opposite words.
  auto holds = [](const std::vector<int64_t>& ids, const std::vector<int32_t>& set) {
    return std::any_of(ids.begin(), ids.end(), [&](int64_t id) { return std::binary_search(set.begin(), set.end(), id); });
  };
  f[17] = static_cast<float>((holds(q, o.question_ids) ? 0.5 : 0.0) + (holds(c, o.question_ids) ? 0.5 : 0.0));
  auto members = [](const std::vector<int64_t>& ids, const std::vector<int32_t>& set) {
    std::set<int64_t> out;
    for (int64_t id : ids)
      if (std::binary_search(set.begin(), set.end(), id)) out.insert(id);
    return out;
  };
  f[18] = members(q, o.wh_ids) != members(c, o.wh_ids) ? 1.f : 0.f;
  const std::set<int64_t> cset(c.begin(), c.end()), qset(q.begin(), q.end());
  double missing = 0;
  for (int64_t id : members(q, o.number_ids)) missing += cset.count(id) == 0;
  f[19] = static_cast<float>(missing);
  double opposite = 0;
  for (int64_t a : qset) {
    if (cset.count(a)) continue;
    auto it = std::lower_bound(o.opposite_ids.begin(), o.opposite_ids.end(), std::make_pair(static_cast<int32_t>(a), INT32_MIN));
    for (; it != o.opposite_ids.end() && it->first == a; ++it)
      if (cset.count(it->second) && !qset.count(it->second)) {
        ++opposite;
        break;
      }
  }
  f[20] = static_cast<float>(opposite);
}

}  // namespace

at::Tensor gate_feature_matrix(const Maps& m, const MlpGateOptions& o, bool symmetric) {
  require_ids(m, "its gate features");
  SIEVE_THROW_IF_NOT(m.pooled.defined(), "the mlp gate needs the maps' pooled cosines (query_maps with_pooled)");
  const int64_t B = m.M.size(0), R = m.M.size(1), C = m.M.size(2);
  const auto F = static_cast<int64_t>(gate_feature_names().size());
  at::Tensor out = at::zeros({B, F}, at::kFloat);
  const at::Tensor M = m.M.to(at::kFloat).contiguous(), pooled = m.pooled.to(at::kFloat).contiguous();
  const at::Tensor qi = m.q_ids.to(at::kLong).contiguous(), ci = m.c_ids.to(at::kLong).contiguous();
  const at::Tensor qm = m.q_mask.to(at::kFloat).contiguous(), cm = m.c_mask.to(at::kFloat).contiguous();
  float* x = out.data_ptr<float>();
  const float* mp = M.data_ptr<float>();
  std::vector<double> decay(static_cast<size_t>(std::max(R, C)));
  for (size_t d = 0; d < decay.size(); ++d) decay[d] = std::exp(-kLambda * static_cast<double>(d) / kTau);
  // The pairs are shared out over the compute threads; each writes its own row of `out`.
  omp_ranges(static_cast<size_t>(B), compute_threads(), [&](size_t begin, size_t end) {
    std::vector<float> row_max, E, back(static_cast<size_t>(F));
    for (auto b = static_cast<int64_t>(begin); b < static_cast<int64_t>(end); ++b) {
      float* f = x + b * F;
      f[0] = pooled.data_ptr<float>()[b];
      // Valid rows and columns are leading (packed from position 0), as every map builder lays them.
      const std::vector<int64_t> q = valid_ids(qi, qm, b), c = valid_ids(ci, cm, b);
      const auto rows = static_cast<int64_t>(q.size()), cols = static_cast<int64_t>(c.size());
      if (rows == 0 || cols == 0) continue;
      const float* block = mp + b * R * C;  // row i starts at i * C
      E.resize(static_cast<size_t>(R * C));
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j) E[i * C + j] = std::exp((block[i * C + j] - 1.0f) / static_cast<float>(kTau));
      map_features(block, E.data(), rows, cols, C, 1, decay, row_max, f);
      id_features(q, c, o, f);
      if (!symmetric) continue;
      back[0] = f[0];
      map_features(block, E.data(), cols, rows, 1, C, decay, row_max, back.data());
      id_features(c, q, o, back.data());
      for (int64_t k = 0; k < F; ++k) f[k] = static_cast<float>((static_cast<double>(f[k]) + back[k]) * 0.5);
    }
  });
  return out;
}

at::Tensor mlp_gate_scores(const at::Tensor& features, const MlpGateOptions& o) {
  // The file's features are a prefix of the columns (check_mlp_gate): it reads the first F.
  const size_t all = gate_feature_names().size(), F = o.features.size(), H = o.hidden_bias.size();
  SIEVE_ASSERT(features.dim() == 2 && features.size(1) == static_cast<int64_t>(all) && F <= all);
  const at::Tensor x = features.to(at::kDouble).contiguous();
  const auto B = static_cast<size_t>(x.size(0));
  std::vector<float> s(B);
  std::vector<double> z(F), h(H);
  const double* xp = x.data_ptr<double>();
  for (size_t b = 0; b < B; ++b) {
    for (size_t k = 0; k < F; ++k) z[k] = (xp[b * all + k] - o.mean[k]) / o.scale[k];
    for (size_t u = 0; u < H; ++u) {
      double a = o.hidden_bias[u];
      for (size_t k = 0; k < F; ++k) a += o.hidden_weights[u * F + k] * z[k];
      h[u] = std::tanh(a);
    }
    const std::vector<double>& in = H > 0 ? h : z;
    double logit = o.bias;
    for (size_t k = 0; k < in.size(); ++k) logit += o.weights[k] * in[k];
    double base = o.skip_bias;
    for (size_t k = 0; k < o.skip_weights.size(); ++k) base += o.skip_weights[k] * z[k];
    // veto: base - softplus(logit), softplus(u) = max(u, 0) + log1p(exp(-|u|)) (no overflow)
    logit = o.veto ? base - (std::max(logit, 0.0) + std::log1p(std::exp(-std::fabs(logit)))) : logit + base;
    s[b] = static_cast<float>(1.0 / (1.0 + std::exp(-logit)));
  }
  return at::tensor(s, at::kFloat);
}

void check_mlp_gate(const MlpGateOptions& o, const std::string& what) {
  const auto& all = gate_feature_names();
  const bool prefix = !o.features.empty() && o.features.size() <= all.size() &&
                      std::equal(o.features.begin(), o.features.end(), all.begin());
  SIEVE_THROW_IF_NOT(prefix, what << ": the gate's features are not this sieve's (a prefix of its " << all.size()
                                  << " named features, " << all.front() << " .. " << all.back() << "); fit it again");
  const size_t F = o.features.size(), H = o.hidden_bias.size();
  SIEVE_THROW_IF_NOT(o.skip_weights.empty() || o.skip_weights.size() == F,
                     what << ": the gate's skip weights must be none or " << F << ", not " << o.skip_weights.size());
  SIEVE_THROW_IF_NOT(!o.veto || !o.skip_weights.empty(), what << ": a veto gate needs the skip weights of its base");
  SIEVE_THROW_IF_NOT(std::isfinite(o.skip_bias), what << ": the gate's skip bias must be finite");
  SIEVE_THROW_IF_NOT(H <= 4096, what << ": at most 4096 hidden units, not " << H);
  SIEVE_THROW_IF_NOT(o.mean.size() == F && o.scale.size() == F && o.hidden_weights.size() == H * F &&
                         o.weights.size() == (H > 0 ? H : F),
                     what << ": the gate needs " << F << " means and scales, " << H << " x " << F
                          << " hidden weights and " << (H > 0 ? H : F) << " output weights");
  for (size_t k = 0; k < F; ++k)
    SIEVE_THROW_IF_NOT(std::isfinite(o.mean[k]) && std::isfinite(o.scale[k]) && o.scale[k] > 0,
                       what << ": the gate's feature " << o.features[k] << " needs a finite mean and a positive scale");
  auto finite = [](const std::vector<double>& v) {
    return std::all_of(v.begin(), v.end(), [](double d) { return std::isfinite(d); });
  };
  SIEVE_THROW_IF_NOT(finite(o.hidden_weights) && finite(o.hidden_bias) && finite(o.weights) && finite(o.skip_weights) &&
                         std::isfinite(o.bias),
                     what << ": the gate's weights must be finite");
  SIEVE_THROW_IF_NOT(!o.cue_ids.empty(), what << ": the gate needs its negation cue ids");
}

}  // namespace verify

const std::vector<std::string>& gate_feature_names() {
  static const std::vector<std::string> kNames = {
      "pooled", "f0",      "f1",    "f2",    "f2_pos",    "row_min",    "row_low",   "id_share",
      "bigram_share", "cue_gap", "crossed", "voice", "order_gap", "discordant", "len_ratio", "displacement", "conj_swap",
      "question", "wh_gap", "num_gap", "opposite"};
  return kNames;
}

std::vector<std::vector<float>> gate_features(const TokenStates& query, const std::vector<const TokenStates*>& candidates,
                                              const MlpGateOptions& options, size_t max_tokens, bool symmetric) {
  if (candidates.empty()) return {};
  const size_t dim = query.length ? query.values.size() / query.length : 0;
  SIEVE_THROW_IF_NOT(dim > 0, "the query has no token states");
  const verify::Maps m = verify::query_maps(query, candidates, dim, max_tokens, /*with_pooled=*/true);
  const at::Tensor x = verify::gate_feature_matrix(m, options, symmetric).contiguous();
  const int64_t F = x.size(1);
  std::vector<std::vector<float>> rows(candidates.size());
  for (size_t b = 0; b < rows.size(); ++b)
    rows[b].assign(x.data_ptr<float>() + static_cast<int64_t>(b) * F, x.data_ptr<float>() + static_cast<int64_t>(b + 1) * F);
  return rows;
}

}  // namespace sieve

namespace sieve {

std::vector<std::vector<float>> gate_text_pair_features(const Encoder& encoder,
                                                        const std::vector<std::pair<std::string, std::string>>& pairs,
                                                        const MlpGateOptions& options, size_t max_tokens,
                                                        bool symmetric, size_t batch_size) {
  std::vector<std::vector<float>> rows;
  rows.reserve(pairs.size());
  constexpr size_t kChunk = 1024;  // pairs encoded at once: their token states are held together
  EncodeCall call;
  call.batch_size = batch_size;
  call.token_states = true;
  for (size_t start = 0; start < pairs.size(); start += kChunk) {
    const size_t end = std::min(pairs.size(), start + kChunk);
    std::vector<std::string> texts;
    for (size_t i = start; i < end; ++i) {
      texts.push_back(pairs[i].first);
      texts.push_back(pairs[i].second);
    }
    const Embeddings e = encoder.encode(texts, call);
    for (size_t i = 0; i + 1 < e.tokens.size(); i += 2) {
      auto r = gate_features(e.tokens[i], {&e.tokens[i + 1]}, options, max_tokens, symmetric);
      rows.push_back(std::move(r[0]));
    }
  }
  return rows;
}

}  // namespace sieve
