// The Verifier implementations: parameter-free F0-F2 and the learned F3/F4, their files.
#include <strings.h>
#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <nlohmann/json.hpp>

#include "core/file_util.h"
#include "model/tensor_io.h"
#include "sieve/error.h"
#include "sieve/safetensors.h"
#include "sieve/verify.h"
#include "verify/f3_cnn.h"
#include "verify/f4_transformer.h"
#include "verify/gate_features.h"
#include "verify/map_scores.h"
#include "verify/verifier_module.h"

namespace sieve {
namespace {

using namespace sieve::verify;

constexpr const char* kMetadataKey = "sieve_verifier";
// Version 2 adds the exact-match channel, version 3 the cue channel (f4.cue_ids), version 4 the
// cue and order penalties (cue_penalty, order_penalty), version 5 cues of several pieces (each cue
// an array of ids, where versions 3 and 4 hold one id per cue); a file without them is still
// written as the lowest version that holds it, so that older readers keep reading what they can
// (and refuse what they cannot compute). Version 6 adds the symmetric score (`symmetric`), version
// 7 the Mlp kind (`mlp`: its cue and voice ids, feature names, standardisation and weights).
// Version 8 (issue 57) the mlp gate's features past the first 17 (its question, wh-word, number
// and opposite word ids), its skip weights and the veto form (veto, skip_bias); a gate of the first
// 17 features alone stays 7.
constexpr int kVerifierFormatVersion = 8;

// True when an mlp gate needs format 8: it reads a feature past the first 17, or has skip weights.
bool mlp_v8(const MlpGateOptions& l) { return l.features.size() > 17 || !l.skip_weights.empty() || l.veto; }
constexpr int kKinds = 6;

bool has_runs(const CueSequences& cues) {
  return std::any_of(cues.begin(), cues.end(), [](const std::vector<int32_t>& r) { return r.size() != 1; });
}

// Cues of one piece each as a flat array (what versions 3 and 4 read), else an array of runs.
nlohmann::json cues_to_json(const CueSequences& cues) {
  if (has_runs(cues)) return cues;
  nlohmann::json flat = nlohmann::json::array();
  for (const auto& r : cues) flat.push_back(r[0]);
  return flat;
}

CueSequences cues_from_json(const nlohmann::json& j, const std::string& what) {
  SIEVE_THROW_IF_NOT(j.is_array(), what << ": cues must be an array");
  CueSequences out;
  for (const auto& e : j) {
    if (e.is_number_integer()) {
      out.push_back({e.get<int32_t>()});
    } else {
      out.push_back(e.get<std::vector<int32_t>>());
      SIEVE_THROW_IF_NOT(!out.back().empty(), what << ": a cue of no tokens");
    }
  }
  return out;
}

nlohmann::json config_to_json(const VerifierConfig& c) {
  const bool v2 = reads_token_ids(c);
  const bool v3 = c.kind == VerifierKind::F4 && !c.f4.cue_ids.empty();
  const bool v4 = c.cue_penalty.weight != 0 || c.order_penalty.weight != 0;
  const bool v5 = (v3 && has_runs(c.f4.cue_ids)) || (c.cue_penalty.weight != 0 && has_runs(c.cue_penalty.ids));
  nlohmann::json j = {
      {"format_version", c.kind == VerifierKind::Mlp ? (mlp_v8(c.mlp) ? 8 : 7) : c.symmetric ? 6 : v5 ? 5 : v4 ? 4 : v3 ? 3 : v2 ? 2 : 1},
      {"kind", verifier_kind_name(c.kind)},
      {"max_tokens", c.max_tokens},
      {"encoder_dim", c.encoder_dim},
      {"encoder_identity", c.encoder_identity},
      {"f2", {{"lambda", c.f2.lambda}, {"tau", c.f2.tau}, {"bandwidth", c.f2.bandwidth}, {"gamma_mono", c.f2.gamma_mono}}},
      {"f3", {{"hidden", c.f3.hidden}, {"kernel", c.f3.kernel}, {"blocks", c.f3.blocks}, {"mlp_hidden", c.f3.mlp_hidden},
              {"augmented", c.f3.augmented}, {"dropout", c.f3.dropout}}},
      {"f4", {{"width", c.f4.width}, {"layers", c.f4.layers}, {"heads", c.f4.heads}, {"ff", c.f4.ff},
              {"patch", c.f4.patch}, {"augmented", c.f4.augmented}, {"dropout", c.f4.dropout}}},
      {"penalty", {{"enabled", c.penalty.enabled}, {"beta", c.penalty.beta}, {"tau_p", c.penalty.tau_p}}},
  };
  if (!std::isnan(c.threshold)) j["threshold"] = c.threshold;
  if (c.symmetric) j["symmetric"] = true;
  if (v2) {
    j["f3"]["exact_match"] = c.f3.exact_match;
    j["f4"]["exact_match"] = c.f4.exact_match;
  }
  if (v3) j["f4"]["cue_ids"] = cues_to_json(c.f4.cue_ids);
  if (c.cue_penalty.weight != 0) j["cue_penalty"] = {{"weight", c.cue_penalty.weight}, {"ids", cues_to_json(c.cue_penalty.ids)}};
  if (c.order_penalty.weight != 0)
    j["order_penalty"] = {{"weight", c.order_penalty.weight}, {"voice_ids", c.order_penalty.voice_ids}};
  if (c.kind == VerifierKind::Mlp) {
    const MlpGateOptions& l = c.mlp;
    j["mlp"] = {{"cue_ids", cues_to_json(l.cue_ids)}, {"voice_ids", l.voice_ids}, {"conj_ids", l.conj_ids}, {"features", l.features},
                   {"mean", l.mean}, {"scale", l.scale}, {"hidden_weights", l.hidden_weights},
                   {"hidden_bias", l.hidden_bias}, {"weights", l.weights}, {"bias", l.bias}};
    if (mlp_v8(l)) {
      nlohmann::json opposite = nlohmann::json::array();
      for (const auto& [a, b] : l.opposite_ids) opposite.push_back({a, b});
      j["mlp"]["question_ids"] = l.question_ids;
      j["mlp"]["wh_ids"] = l.wh_ids;
      j["mlp"]["number_ids"] = l.number_ids;
      j["mlp"]["opposite_ids"] = opposite;
      j["mlp"]["skip_weights"] = l.skip_weights;
      if (l.veto) {
        j["mlp"]["veto"] = true;
        j["mlp"]["skip_bias"] = l.skip_bias;
      }
    }
  }
  return j;
}

VerifierConfig config_from_json(const nlohmann::json& j, const std::string& what) {
  try {
    const int version = j.value("format_version", 0);
    SIEVE_THROW_IF_NOT(version >= 1 && version <= kVerifierFormatVersion,
                       what << ": verifier format version " << version << "; this sieve reads 1 to "
                            << kVerifierFormatVersion);
    VerifierConfig c;
    c.kind = verifier_kind_from_name(j.at("kind").get<std::string>());
    c.max_tokens = j.at("max_tokens").get<size_t>();
    c.encoder_dim = j.at("encoder_dim").get<size_t>();
    c.encoder_identity = j.at("encoder_identity").get<std::string>();
    const auto& f2 = j.at("f2");
    c.f2 = {f2.at("lambda"), f2.at("tau"), f2.at("bandwidth"), f2.at("gamma_mono")};
    const auto& f3 = j.at("f3");
    c.f3 = {f3.at("hidden"), f3.at("kernel"), f3.at("blocks"), f3.at("mlp_hidden"), f3.at("augmented"), f3.at("dropout")};
    const auto& f4 = j.at("f4");
    c.f4 = {f4.at("width"), f4.at("layers"), f4.at("heads"), f4.at("ff"), f4.at("patch"), f4.at("augmented"), f4.at("dropout")};
    c.f3.exact_match = f3.value("exact_match", false);
    c.f4.exact_match = f4.value("exact_match", false);
    if (f4.contains("cue_ids")) c.f4.cue_ids = cues_from_json(f4.at("cue_ids"), what);
    const auto& p = j.at("penalty");
    c.penalty = {p.at("enabled"), p.at("beta"), p.at("tau_p")};
    if (j.contains("cue_penalty")) {
      const auto& cp = j.at("cue_penalty");
      c.cue_penalty = {cp.at("weight").get<double>(), cues_from_json(cp.at("ids"), what)};
      SIEVE_THROW_IF_NOT(std::isfinite(c.cue_penalty.weight) && !c.cue_penalty.ids.empty(),
                         what << ": the cue penalty needs a finite weight and at least one cue id");
    }
    if (j.contains("order_penalty")) {
      const auto& op = j.at("order_penalty");
      c.order_penalty = {op.at("weight").get<double>(), op.at("voice_ids").get<std::vector<int32_t>>()};
      SIEVE_THROW_IF_NOT(std::isfinite(c.order_penalty.weight), what << ": the order penalty needs a finite weight");
    }
    if (j.contains("threshold")) c.threshold = j.at("threshold").get<double>();
    c.symmetric = j.value("symmetric", false);
    if (c.kind == VerifierKind::Mlp) {
      SIEVE_THROW_IF_NOT(j.contains("mlp"), what << ": an mlp verifier without its weights");
      const auto& l = j.at("mlp");
      c.mlp.cue_ids = cues_from_json(l.at("cue_ids"), what);
      c.mlp.voice_ids = l.at("voice_ids").get<std::vector<int32_t>>();
      c.mlp.conj_ids = l.at("conj_ids").get<std::vector<int32_t>>();
      c.mlp.features = l.at("features").get<std::vector<std::string>>();
      c.mlp.mean = l.at("mean").get<std::vector<double>>();
      c.mlp.scale = l.at("scale").get<std::vector<double>>();
      c.mlp.hidden_weights = l.at("hidden_weights").get<std::vector<double>>();
      c.mlp.hidden_bias = l.at("hidden_bias").get<std::vector<double>>();
      c.mlp.weights = l.at("weights").get<std::vector<double>>();
      c.mlp.bias = l.at("bias").get<double>();
      if (version >= 8) {
        c.mlp.question_ids = l.at("question_ids").get<std::vector<int32_t>>();
        c.mlp.wh_ids = l.at("wh_ids").get<std::vector<int32_t>>();
        c.mlp.number_ids = l.at("number_ids").get<std::vector<int32_t>>();
        for (const auto& p : l.at("opposite_ids")) c.mlp.opposite_ids.emplace_back(p.at(0).get<int32_t>(), p.at(1).get<int32_t>());
        c.mlp.skip_weights = l.at("skip_weights").get<std::vector<double>>();
        c.mlp.veto = l.value("veto", false);
        c.mlp.skip_bias = l.value("skip_bias", 0.0);
        for (auto* ids : {&c.mlp.question_ids, &c.mlp.wh_ids, &c.mlp.number_ids})
          SIEVE_THROW_IF_NOT(std::is_sorted(ids->begin(), ids->end()), what << ": the mlp gate's word ids must be sorted");
        SIEVE_THROW_IF_NOT(std::is_sorted(c.mlp.opposite_ids.begin(), c.mlp.opposite_ids.end()),
                           what << ": the mlp gate's opposite ids must be sorted");
      }
      check_mlp_gate(c.mlp, what);
    }
    SIEVE_THROW_IF_NOT(!reads_token_ids(c) || !c.encoder_identity.empty(),
                       what << ": this verifier reads token ids but records no encoder identity; ids mean nothing "
                               "without their vocabulary (create it again for its encoder)");
    return c;
  } catch (const nlohmann::json::exception& e) {
    SIEVE_THROW(what << ": invalid verifier config: " << e.what());
  }
}

class VerifierImpl final : public Verifier {
 public:
  VerifierImpl(VerifierConfig c, uint64_t seed) : m_(std::move(c), seed) {}

  const VerifierConfig& config() const override { return m_.config(); }
  size_t parameter_count() const override { return m_.parameter_count(); }

  using Verifier::score;
  std::vector<float> score(const TokenStates& query, const std::vector<const TokenStates*>& candidates,
                           ScoreTiming* timing) const override {
    if (candidates.empty()) return {};
    c10::InferenceMode guard;
    const VerifierConfig& c = m_.config();
    const size_t dim = c.encoder_dim > 0 ? c.encoder_dim : (query.length ? query.values.size() / query.length : 0);
    SIEVE_THROW_IF_NOT(dim > 0, "the query has no token states");
    using Clock = std::chrono::steady_clock;
    auto t0 = Clock::now();
    Maps m = query_maps(query, candidates, dim, c.max_tokens, /*with_pooled=*/c.kind == VerifierKind::Mlp);
    auto t1 = Clock::now();
    at::Tensor s = m_.scores(m, /*inference=*/true).contiguous().to(at::kFloat);
    std::vector<float> out(s.data_ptr<float>(), s.data_ptr<float>() + s.numel());
    if (timing) {
      timing->map = std::chrono::duration<double>(t1 - t0).count();
      timing->model = std::chrono::duration<double>(Clock::now() - t1).count();
    }
    return out;
  }

  void save(const std::string& path) const override { m_.write(path, m_.config()); }

  void save_with_threshold(const std::string& path, double threshold) const override {
    // NaN would read back as "uncalibrated"; an infinity is written as JSON null, which no reader takes.
    SIEVE_THROW_IF_NOT(std::isfinite(threshold),
                       "the gate threshold must be a finite number, not " << threshold << "; '" << path << "' not written");
    VerifierConfig c = m_.config();
    c.threshold = threshold;
    m_.write(path, c);
  }

  void save_for_encoder(const std::string& path, const std::string& encoder_identity) const override {
    VerifierConfig c = m_.config();
    c.encoder_identity = encoder_identity;
    m_.write(path, c);
  }

  void load_weights(const SafetensorsFile& f) { m_.load_weights(f); }

 private:
  VerifierModule m_;
};

}  // namespace

namespace {

// The sizes a verifier file (or a caller) can get wrong, checked before libtorch builds the layers:
// its own checks throw c10::Error or terminate (a dropout of 5.1 did, found by fuzzing) instead
// of naming the field, and absurd sizes would allocate gigabytes.
void check_config(const VerifierConfig& c) {
  auto in = [](double v, double lo, double hi) { return v >= lo && v <= hi; };  // false for NaN
  SIEVE_THROW_IF_NOT(c.max_tokens >= 1 && c.max_tokens <= 4096, "max_tokens must be 1 to 4096, not " << c.max_tokens);
  SIEVE_THROW_IF_NOT(c.encoder_dim <= 65536, "encoder_dim must be at most 65536, not " << c.encoder_dim);
  if (c.kind == VerifierKind::F3) {
    const F3Options& o = c.f3;
    SIEVE_THROW_IF_NOT(in(o.hidden, 1, 4096) && in(o.mlp_hidden, 1, 65536) && in(o.kernel, 1, 31) && in(o.blocks, 0, 64),
                       "F3 sizes out of range (hidden 1-4096, mlp_hidden 1-65536, kernel 1-31, blocks 0-64): "
                           << o.hidden << ", " << o.mlp_hidden << ", " << o.kernel << ", " << o.blocks);
    SIEVE_THROW_IF_NOT(in(o.dropout, 0, 1) && o.dropout < 1, "F3 dropout must be in [0, 1), not " << o.dropout);
  }
  if (c.kind == VerifierKind::F4) {
    const F4Options& o = c.f4;
    SIEVE_THROW_IF_NOT(in(o.width, 1, 65536) && in(o.layers, 0, 64) && in(o.heads, 1, 256) && in(o.ff, 1, 65536) &&
                           in(o.patch, 1, static_cast<double>(c.max_tokens)),
                       "F4 sizes out of range (width 1-65536, layers 0-64, heads 1-256, ff 1-65536, patch 1-max_tokens): "
                           << o.width << ", " << o.layers << ", " << o.heads << ", " << o.ff << ", " << o.patch);
    SIEVE_THROW_IF_NOT(o.width % o.heads == 0, "F4 width " << o.width << " is not a multiple of its " << o.heads << " heads");
    SIEVE_THROW_IF_NOT(in(o.dropout, 0, 1) && o.dropout < 1, "F4 dropout must be in [0, 1), not " << o.dropout);
  }
}

}  // namespace

namespace verify {

VerifierModule::VerifierModule(VerifierConfig c, uint64_t seed) : c_(std::move(c)) {
  if (c_.kind == VerifierKind::F4 && c_.f4.width == 0) c_.f4.width = static_cast<int>(c_.encoder_dim);
  check_config(c_);
  if (c_.kind == VerifierKind::Mlp) check_mlp_gate(c_.mlp, "an mlp verifier");
  if (c_.kind == VerifierKind::F3 || c_.kind == VerifierKind::F4) {
    SIEVE_THROW_IF_NOT(c_.encoder_dim > 0, "a learned verifier needs the encoder width (encoder_dim)");
    at::manual_seed(seed);
    const auto S = static_cast<int64_t>(c_.max_tokens);
    try {
      if (c_.kind == VerifierKind::F3) module_ = F3Cnn(c_.f3, S).ptr();
      else module_ = F4Transformer(c_.f4, S).ptr();
    } catch (const c10::Error& e) {
      SIEVE_THROW("invalid verifier config: " << e.what_without_backtrace());
    }
    module_->eval();
  }
}

size_t VerifierModule::parameter_count() const {
  if (c_.kind == VerifierKind::Mlp)
    return c_.mlp.hidden_weights.size() + c_.mlp.hidden_bias.size() + c_.mlp.weights.size() + 1;
  size_t n = 0;
  if (module_)
    for (const auto& p : module_->parameters()) n += static_cast<size_t>(p.numel());
  return n;
}

at::Tensor VerifierModule::scores(const Maps& m, bool inference) const {
  if (c_.kind == VerifierKind::Mlp) {  // both directions' features averaged, then one score
    const at::Tensor x = gate_feature_matrix(m, c_.mlp, c_.symmetric);
    at::Tensor s = mlp_gate_scores(x, c_.mlp).to(m.M.device(), m.M.scalar_type());
    if (c_.cue_penalty.weight != 0) s = s - c_.cue_penalty.weight * cue_gap(m, c_.cue_penalty.ids);
    if (c_.order_penalty.weight != 0) s = s - c_.order_penalty.weight * order_gap(m, c_.order_penalty.voice_ids);
    return s;
  }
  if (!c_.symmetric) return one_direction(m, inference);
  return (one_direction(m, inference) + one_direction(transposed(m), inference)) * 0.5;
}

at::Tensor VerifierModule::one_direction(const Maps& m, bool inference) const {
  at::Tensor s;
  switch (c_.kind) {
    case VerifierKind::F0:
      s = f0_score(m);
      break;
    case VerifierKind::F1:
      s = f1_score(m);
      break;
    case VerifierKind::F2:
      s = f2_score(m, c_.f2);
      break;
    case VerifierKind::F3:
      s = module_->as<F3CnnImpl>()->forward(m);
      break;
    case VerifierKind::F4: {
      auto* f4 = module_->as<F4TransformerImpl>();
      s = inference && !f4->is_training() ? f4->score(m) : f4->forward(m);
      break;
    }
    case VerifierKind::Mlp:
      s = mlp_gate_scores(gate_feature_matrix(m, c_.mlp, false), c_.mlp).to(m.M.device(), m.M.scalar_type());
      break;
  }
  if (c_.penalty.enabled) s = conditional_penalty(s, f1_score(m), c_.penalty);
  if (c_.cue_penalty.weight != 0) s = s - c_.cue_penalty.weight * cue_gap(m, c_.cue_penalty.ids);
  if (c_.order_penalty.weight != 0) s = s - c_.order_penalty.weight * order_gap(m, c_.order_penalty.voice_ids);
  return s;
}

void VerifierModule::write(const std::string& path, const VerifierConfig& config) const {
  SIEVE_THROW_IF_NOT(!reads_token_ids(config) || !config.encoder_identity.empty(),
                     "cannot write '" << path << "': the verifier reads token ids and records no encoder identity "
                                         "(give it the encoder's, model_identity())");
  std::vector<std::pair<std::string, at::Tensor>> named;
  if (module_) {
    for (const auto& p : module_->named_parameters()) named.emplace_back(p.key(), p.value());
    for (const auto& b : module_->named_buffers()) named.emplace_back(b.key(), b.value());
  }
  write_tensors(path, named, {{kMetadataKey, config_to_json(config).dump()}});
}

void VerifierModule::load_weights(const SafetensorsFile& f) {
  if (!module_) return;
  at::NoGradGuard no_grad;
  auto copy = [&](const std::string& name, at::Tensor& dst) {
    SIEVE_THROW_IF_NOT(f.contains(name), f.path() << ": tensor '" << name << "' is missing");
    copy_tensor(f, f.get(name), dst);
  };
  for (auto& p : module_->named_parameters()) copy(p.key(), p.value());
  for (auto& b : module_->named_buffers()) copy(b.key(), b.value());
}

}  // namespace verify

bool reads_token_ids(const VerifierConfig& c) {
  return c.kind == VerifierKind::Mlp || (c.kind == VerifierKind::F3 && c.f3.exact_match) ||
         (c.kind == VerifierKind::F4 && (c.f4.exact_match || !c.f4.cue_ids.empty())) || c.cue_penalty.weight != 0 ||
         c.order_penalty.weight != 0;
}

const char* verifier_kind_name(VerifierKind k) {
  static const char* const kNames[] = {"F0", "F1", "F2", "F3", "F4", "mlp"};
  return kNames[static_cast<int>(k)];
}

VerifierKind verifier_kind_from_name(const std::string& name) {
  for (int k = 0; k < kKinds; ++k)
    if (strcasecmp(name.c_str(), verifier_kind_name(static_cast<VerifierKind>(k))) == 0) return static_cast<VerifierKind>(k);
  SIEVE_THROW("unknown verifier '" << name << "' (F0, F1, F2, F3, F4, mlp, or a verifier file)");
}

std::unique_ptr<Verifier> Verifier::create(const VerifierConfig& config, uint64_t seed) {
  return std::make_unique<VerifierImpl>(config, seed);
}

std::unique_ptr<Verifier> Verifier::load(const std::string& file_or_name, const std::string& encoder_identity) {
  // A built-in name wins over a file of that name in the working folder (that file is ./F1).
  const bool path_like = file_or_name.find('/') != std::string::npos ||
                         file_or_name.find(".safetensors") != std::string::npos;
  bool kind_name = false;
  for (int k = 0; k < kKinds; ++k)
    kind_name = kind_name || strcasecmp(file_or_name.c_str(), verifier_kind_name(static_cast<VerifierKind>(k))) == 0;
  if (!path_like && (kind_name || !is_file(file_or_name))) {
    VerifierConfig c;
    VerifierKind k;
    try {
      k = verifier_kind_from_name(file_or_name);
    } catch (const Error&) {
      SIEVE_THROW("verifier '" << file_or_name
                               << "' is neither a file nor one of F0, F1, F2 (name a file by a path with '/', "
                                  "such as ./"
                               << file_or_name << ", or ending in .safetensors)");
    }
    SIEVE_THROW_IF_NOT(k == VerifierKind::F0 || k == VerifierKind::F1 || k == VerifierKind::F2,
                       "verifier " << file_or_name << " has learned weights: give its file");
    c.kind = k;
    return create(c);
  }
  SIEVE_THROW_IF_NOT(is_file(file_or_name), "verifier file '" << file_or_name << "' does not exist");
  auto f = SafetensorsFile::open(file_or_name);
  auto it = f->metadata().find(kMetadataKey);
  SIEVE_THROW_IF_NOT(it != f->metadata().end(), "'" << file_or_name << "' is not a sieve verifier file (no config)");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(it->second);
  } catch (const nlohmann::json::exception& e) {
    SIEVE_THROW("'" << file_or_name << "': the verifier config is not valid JSON: " << e.what());
  }
  VerifierConfig c = config_from_json(j, "'" + file_or_name + "'");
  SIEVE_THROW_IF_NOT(encoder_identity.empty() || c.encoder_identity.empty() || c.encoder_identity == encoder_identity,
                     "verifier '" << file_or_name << "' was trained for encoder " << c.encoder_identity
                                  << ", not for this one (" << encoder_identity << ")");
  auto v = std::make_unique<VerifierImpl>(c, 0);
  v->load_weights(*f);
  return v;
}

}  // namespace sieve
