// `sieve verify score|create|info`: run a verifier over sentence pairs, make a verifier file,
// describe one.
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli/cli_common.h"
#include "eval/pairs.h"
#include "sieve/error.h"
#include "sieve/model.h"
#include "core/checksum.h"
#include "core/file_util.h"
#include "sieve/index.h"
#include "sieve/pipeline.h"
#include "sieve/tokenizer.h"
#include "sieve/verify.h"

namespace sieve::cli {
namespace {

nlohmann::json describe(const Verifier& v) {
  const VerifierConfig& c = v.config();
  nlohmann::json j = {{"kind", verifier_kind_name(c.kind)},
                      {"parameters", v.parameter_count()},
                      {"max_tokens", c.max_tokens},
                      {"encoder_dim", c.encoder_dim},
                      {"encoder_identity", c.encoder_identity},
                      {"penalty", c.penalty.enabled}};
  if (c.kind == VerifierKind::F2) j["f2"] = {{"lambda", c.f2.lambda}, {"tau", c.f2.tau}};
  if (c.cue_penalty.weight != 0) j["cue_penalty"] = {{"weight", c.cue_penalty.weight}, {"cues", c.cue_penalty.ids.size()}};
  if (c.order_penalty.weight != 0) j["order_penalty"] = c.order_penalty.weight;
  if (!std::isnan(c.threshold)) j["threshold"] = c.threshold;
  if (c.symmetric) j["symmetric"] = true;
  if (c.kind == VerifierKind::Mlp) {
    j["mlp"] = {{"hidden", c.mlp.hidden_bias.size()}, {"features", c.mlp.features}};
  }
  return j;
}

// Scores every pair with `verifier` (the pooled cosine when it is that; a cross-encoder needs
// no encoder).
std::vector<float> score_pairs(const std::vector<eval::SentencePair>& pairs, const std::string& model,
                               const ResolvedVerifier& verifier, const DeviceFlags& dev, size_t batch_size) {
  std::unique_ptr<Encoder> enc;
  if (!verifier.cross || verifier.cascade()) enc = Encoder::load(model, dev.options());
  std::vector<std::pair<std::string, std::string>> texts;
  for (const auto& p : pairs) texts.emplace_back(p.sentence1, p.sentence2);
  return score_text_pairs(enc.get(), verifier, texts, batch_size);
}

// `verify calibrate --verifier cascade:DIR`: both tiers score every pair, and the band that
// calibrate_cascade chooses is stored in DIR's sieve file for this fast tier.
void calibrate_cascade_band(const std::vector<eval::SentencePair>& pairs, const std::vector<bool>& positive,
                            const std::string& model, const ResolvedVerifier& rv, const DeviceFlags& dev,
                            size_t batch_size, double max_sent, const std::string& out,
                            const std::string& combination_file) {
  SIEVE_THROW_IF_NOT(out.empty(), "a cascade's band is stored in its cross-encoder's folder; leave out --out");
  SIEVE_THROW_IF_NOT(!std::isnan(rv.cross->threshold()),
                     "calibrate the cross-encoder's threshold first (sieve verify calibrate --verifier cross:"
                         << rv.cross->dir() << ")");
  auto enc = Encoder::load(model, dev.options());
  std::vector<std::pair<std::string, std::string>> texts;
  for (const auto& p : pairs) texts.emplace_back(p.sentence1, p.sentence2);
  const std::vector<float> fast = score_text_pairs(*enc, rv.verifier.get(), texts, batch_size);
  const std::vector<float> cross = rv.cross->score_pairs(texts, batch_size);
  const TierCombination combination =
      combination_file.empty() ? TierCombination{} : read_tier_combination(combination_file);
  const CascadeCalibration c =
      calibrate_cascade(fast, cross, positive, rv.threshold(), rv.cross->threshold(), max_sent, combination);
  CrossEncoderMeta meta = rv.cross->meta();
  meta.cascade_combination = combination;
  meta.cascade_fast_sha256 = sha256_file_hex(default_verifier(model, ""));
  meta.cascade_low = c.band.low;
  meta.cascade_high = c.band.high;
  meta.cascade_sent = c.sent;
  meta.cascade_auc_fast = c.auc_fast;
  meta.cascade_auc_cross = c.auc_cross;
  meta.cascade_auc = c.auc_cascade;
  write_cross_encoder_meta(rv.cross->dir(), meta);
  nlohmann::json j = {{"band", {c.band.low, c.band.high}}, {"sent", c.sent},
                      {"auc_fast", c.auc_fast}, {"auc_cross", c.auc_cross}, {"auc_cascade", c.auc_cascade},
                      {"pairs", pairs.size()}, {"max_sent", max_sent}, {"combined", combination.valid()},
                      {"written", path_join(rv.cross->dir(), kCrossEncoderMetaFile)}};
  std::printf("%s\n", j.dump().c_str());
  if (c.band.low > c.band.high)
    std::fprintf(stderr, "sieve: note: no band beats the fast tier alone on these pairs; the cascade sends nothing\n");
}

// The fitted gate of scripts/fit-gate.py: {features, mean, scale, hidden_weights, hidden_bias,
// weights, bias[, symmetric]}.
MlpGateOptions read_gate_json(const std::string& path, bool& symmetric) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(read_file(path));
    MlpGateOptions l;
    l.features = j.at("features").get<std::vector<std::string>>();
    l.mean = j.at("mean").get<std::vector<double>>();
    l.scale = j.at("scale").get<std::vector<double>>();
    l.hidden_weights = j.value("hidden_weights", std::vector<double>{});
    l.hidden_bias = j.value("hidden_bias", std::vector<double>{});
    l.weights = j.at("weights").get<std::vector<double>>();
    l.bias = j.at("bias").get<double>();
    l.skip_weights = j.value("skip_weights", std::vector<double>{});
    l.veto = j.value("veto", false);
    l.skip_bias = j.value("skip_bias", 0.0);
    symmetric = symmetric || j.value("symmetric", false);
    return l;
  } catch (const nlohmann::json::exception& e) {
    SIEVE_THROW(path << ": not a fitted gate: " << e.what());
  }
}

}  // namespace

void register_verify(CLI::App& app) {
  auto* group = app.add_subcommand("verify", "Stage 2 verifiers: score sentence pairs, create and inspect verifier files");
  group->require_subcommand(1);
  {
    struct Opts {
      std::string model, verifier, pairs;
      DeviceFlags dev;
      size_t batch_size = 32;
    };
    auto o = std::make_shared<Opts>();
    auto* cmd = group->add_subcommand(
        "score", "Score sentence pairs: one JSON line per pair, in input order, with \"score\", \"threshold\" "
                 "(the verifier's calibrated one, or null) and, with a threshold, \"accepted\"");
    cmd->add_option("-m,--model", o->model, std::string("Model directory or installed name (Hugging Face layout; default: ") + kDefaultModel + ")");
    cmd->add_option("--verifier", o->verifier,
                    std::string("A verifier file, or by name: cosine (pooled stage-1 cosine), F0, F1, F2, cross:DIR (a "
                                "cross-encoder folder; default: the verifier.safetensors beside the model, else F1)") + kVerifierNames);
    cmd->add_option("--pairs", o->pairs,
                    "TSV/CSV with a header: sentence1, sentence2[, category][, label]")
        ->required();
    cmd->add_option("--batch-size", o->batch_size, "Texts per forward pass")->capture_default_str()->check(kPositive);
    o->dev.add(cmd);
    on_run(cmd, [o] {
      auto pairs = eval::read_pairs(o->pairs);
      o->model = resolve_model_dir(o->model);
      const ResolvedVerifier verifier = resolve_verifier(o->verifier, {o->model, ""});
      std::vector<float> scores = score_pairs(pairs, o->model, verifier, o->dev, o->batch_size);
      // The decision the gate would take: with the verifier's calibrated threshold, else none.
      const double threshold = verifier.threshold();
      std::string out;
      for (size_t i = 0; i < pairs.size(); ++i) {
        out += "{\"score\":";
        append_float(out, scores[i]);
        if (std::isnan(threshold)) {
          out += ",\"threshold\":null";
        } else {
          out += ",\"threshold\":";
          append_float(out, static_cast<float>(threshold));
          out += scores[i] >= threshold ? ",\"accepted\":true" : ",\"accepted\":false";
        }
        if (!pairs[i].category.empty()) out += ",\"category\":" + json_quote(pairs[i].category);
        if (!pairs[i].label.empty()) out += ",\"label\":" + json_quote(pairs[i].label);
        out += "}\n";
        if (out.size() > (1u << 16)) {
          std::fwrite(out.data(), 1, out.size(), stdout);
          out.clear();
        }
      }
      std::fwrite(out.data(), 1, out.size(), stdout);
    });
  }
  {
    struct Opts {
      std::string model, pairs, out;
      DeviceFlags dev;
      size_t batch_size = 32, max_tokens = 64;
      bool symmetric = false;
    };
    auto o = std::make_shared<Opts>();
    auto* cmd = group->add_subcommand(
        "features", "Write the mlp gate's features of labelled sentence pairs as TSV (label, category, one "
                    "column per feature): what scripts/fit-gate.py fits");
    cmd->add_option("-m,--model", o->model, std::string("Model directory or installed name (default: ") + kDefaultModel + ")");
    cmd->add_option("--pairs", o->pairs, "TSV/CSV with a header: sentence1, sentence2[, category][, label]")->required();
    cmd->add_option("-o,--out", o->out, "TSV to write")->required();
    cmd->add_option("--max-tokens", o->max_tokens, "Tokens per side (the map's size)")->capture_default_str()->check(kPositive);
    cmd->add_flag("--symmetric", o->symmetric, "The mean of both directions' features (a symmetric gate's)");
    cmd->add_option("--batch-size", o->batch_size, "Texts per forward pass")->capture_default_str()->check(kPositive);
    o->dev.add(cmd);
    on_run(cmd, [o] {
      const auto pairs = eval::read_pairs(o->pairs);
      o->model = resolve_model_dir(o->model);
      const auto enc = Encoder::load(o->model, o->dev.options());
      const MlpGateOptions l = mlp_gate_lexicon(enc->tokenizer());
      std::vector<std::pair<std::string, std::string>> texts;
      for (const auto& p : pairs) texts.emplace_back(p.sentence1, p.sentence2);
      const auto rows = gate_text_pair_features(*enc, texts, l, o->max_tokens, o->symmetric, o->batch_size);
      std::string out = "label\tcategory";
      for (const auto& n : gate_feature_names()) out += "\t" + n;
      out += "\n";
      for (size_t i = 0; i < pairs.size(); ++i) {
        out += pairs[i].label + "\t" + pairs[i].category;
        for (float v : rows[i]) {
          out += "\t";
          append_float(out, v);
        }
        out += "\n";
      }
      write_file_atomic(o->out, out);
      std::fprintf(stderr, "verify features: %zu pairs, %zu features -> %s\n", pairs.size(), gate_feature_names().size(),
                   o->out.c_str());
    });
  }
  {
    struct Opts {
      std::string kind = "F4", model, out, weights;
      VerifierConfig c;
      uint64_t seed = 42;
    };
    auto o = std::make_shared<Opts>();
    auto* cmd = group->add_subcommand(
        "create", "Write a verifier file with fresh (random) weights for a model; training is `sieve train verifier`");
    cmd->add_option("--kind", o->kind, "Verifier kind (mlp: with --weights)")
        ->capture_default_str()
        ->check(CLI::IsMember({"F0", "F1", "F2", "F3", "F4", "mlp"}));
    cmd->add_option("--weights", o->weights,
                    "mlp: the fitted gate, a JSON object {features, mean, scale, hidden_weights, hidden_bias, weights, bias"
                    "[, symmetric]} as "
                    "scripts/fit-gate.py writes it");
    cmd->add_option("-m,--model", o->model, std::string("The encoder it verifies for (width and identity; default: ") + kDefaultModel + ")");
    cmd->add_option("-o,--out", o->out, "Verifier file to write (.safetensors)")->required();
    cmd->add_option("--seed", o->seed, "Initialisation seed")->capture_default_str();
    cmd->add_option("--max-tokens", o->c.max_tokens, "Tokens per side (map size)")->capture_default_str();
    cmd->add_option("--f2-lambda", o->c.f2.lambda, "F2 positional bias")->capture_default_str();
    cmd->add_option("--f2-tau", o->c.f2.tau, "F2 temperature")->capture_default_str();
    cmd->add_option("--f3-hidden", o->c.f3.hidden, "F3 channels of the first block")->capture_default_str();
    cmd->add_option("--f3-blocks", o->c.f3.blocks, "F3 conv blocks")->capture_default_str();
    cmd->add_option("--f4-width", o->c.f4.width, "F4 width (0 = the encoder's)")->capture_default_str();
    cmd->add_option("--f4-layers", o->c.f4.layers, "F4 encoder layers")->capture_default_str();
    cmd->add_option("--f4-heads", o->c.f4.heads, "F4 attention heads")->capture_default_str();
    cmd->add_option("--f4-ff", o->c.f4.ff, "F4 FFN width")->capture_default_str();
    cmd->add_flag_callback(
        "--exact-match", [o] { o->c.f3.exact_match = o->c.f4.exact_match = true; },
        "F3/F4: one more map channel, 1 where the query and candidate tokens have the same id");
    cmd->add_flag("--penalty", o->c.penalty.enabled, "Score with the conditional penalty (base F1)");
    cmd->add_flag("--symmetric", o->c.symmetric,
                  "Score both directions and take the mean, so that the score does not depend on which side is the query");
    cmd->add_option("--cue-penalty", o->c.cue_penalty.weight,
                    "Any kind: subtract this times |negation cues of the query - of the candidate| (the model "
                    "tokenizer's cue ids: not, no, never, n't, ...; 0 = off)")
        ->capture_default_str()
        ->check(CLI::Range(0.0, 100.0));
    cmd->add_option("--order-penalty", o->c.order_penalty.weight,
                    "Any kind: subtract this when the words found once on each side come in another order and the "
                    "voice (\"by\") did not change, or the voice changed and the order did not (0 = off)")
        ->capture_default_str()
        ->check(CLI::Range(0.0, 100.0));
    on_run(cmd, [o] {
      o->c.kind = verifier_kind_from_name(o->kind);
      o->model = resolve_model_dir(o->model);
      SIEVE_THROW_IF_NOT((o->c.kind == VerifierKind::Mlp) == !o->weights.empty(),
                         "--weights goes with --kind mlp, and --kind mlp needs --weights");
      if (o->c.kind == VerifierKind::Mlp)
        o->c.mlp = mlp_gate_lexicon(*Tokenizer::from_model_dir(o->model), read_gate_json(o->weights, o->c.symmetric));
      if (o->c.cue_penalty.weight > 0 || o->c.order_penalty.weight > 0) {
        const auto tokenizer = Tokenizer::from_model_dir(o->model);
        if (o->c.cue_penalty.weight > 0) o->c.cue_penalty.ids = negation_cues(*tokenizer);
        if (o->c.order_penalty.weight > 0) o->c.order_penalty.voice_ids = voice_cue_ids(*tokenizer);
      }
      ModelInfo info = read_model_info(o->model);
      o->c.encoder_dim = static_cast<size_t>(info.config.hidden_size);
      o->c.encoder_identity = model_identity(o->model);
      auto v = Verifier::create(o->c, o->seed);
      v->save(o->out);
      std::printf("%s\n", describe(*v).dump().c_str());
    });
  }
  {
    struct Opts {
      std::string model, verifier, pairs, out, positives = eval::default_positive_categories_list();
      double precision = 0.95;
      DeviceFlags dev;
      size_t batch_size = 32;
      bool balanced = false, max_balanced_accuracy = false;
      double max_sent = 0.25;
      std::string combination;
    };
    auto o = std::make_shared<Opts>();
    auto* cmd = group->add_subcommand(
        "calibrate", "Set a verifier's gate threshold from labelled pairs: for a target precision, or at the "
                     "highest balanced accuracy");
    cmd->add_option("-m,--model", o->model, std::string("Model directory or installed name (Hugging Face layout; default: ") + kDefaultModel + ")");
    cmd->add_option("--verifier", o->verifier, std::string("Verifier file, or F0, F1, F2 (then --out is required), or cross:DIR (the threshold goes "
                                                  "into DIR's sieve file)") + kVerifierNames)->required();
    cmd->add_option("--pairs", o->pairs,
                    "Labelled pairs: sentence1, sentence2, label (1/0, same/different, ...); without a label, "
                    "the category decides (see --positive-categories; other categories are near-misses)")
        ->required();
    cmd->add_option("--positive-categories", o->positives, "Categories of positive pairs, for pairs without a label")
        ->capture_default_str();
    cmd->add_option("--target-precision", o->precision, "Precision the gate must reach on these pairs")
        ->capture_default_str()
        ->check(CLI::Range(0.0, 1.0));
    cmd->add_flag("--balanced", o->balanced,
                  "Precision as if positives and near-misses were equally many (TPR / (TPR + FPR))");
    cmd->add_flag("--max-balanced-accuracy", o->max_balanced_accuracy,
                  "Instead of a target precision: the threshold of the highest (TPR + TNR) / 2 (Youden's J); "
                  "the precision reported is the balanced one");
    cmd->add_option("--max-sent", o->max_sent,
                    "cascade:DIR: the largest share of the pairs the band may send to the cross-encoder")
        ->capture_default_str()
        ->check(CLI::Range(0.0, 1.0));
    cmd->add_option("--combination", o->combination,
                    "cascade:DIR: score the band's pairs by this combination of both tiers (the JSON of "
                    "scripts/fit-tiers.py) instead of the cross-encoder alone; it is stored with the band")
        ->check(CLI::ExistingFile);
    cmd->add_option("-o,--out", o->out, "Write the calibrated verifier here (default: update the verifier file)");
    cmd->add_option("--batch-size", o->batch_size, "Texts per forward pass")->capture_default_str()->check(kPositive);
    o->dev.add(cmd);
    on_run(cmd, [o] {
      SIEVE_THROW_IF_NOT(o->verifier != "cosine", "the pooled cosine is not a verifier file; calibrate F0-F4");
      auto pairs = eval::read_pairs(o->pairs);
      std::vector<bool> positive;
      const std::string pos_list = "," + o->positives + ",";
      for (size_t i = 0; i < pairs.size(); ++i) {
        if (!pairs[i].label.empty()) {
          positive.push_back(parse_identity_label(pairs[i].label));
          continue;
        }
        SIEVE_THROW_IF_NOT(!pairs[i].category.empty(), o->pairs << ": pair " << i + 1 << " has no label or category");
        positive.push_back(pos_list.find("," + pairs[i].category + ",") != std::string::npos);
      }
      o->model = resolve_model_dir(o->model);
      const ResolvedVerifier rv = resolve_verifier(o->verifier, {o->model, ""});
      if (rv.cascade()) {
        calibrate_cascade_band(pairs, positive, o->model, rv, o->dev, o->batch_size, o->max_sent, o->out,
                               o->combination);
        return;
      }
      SIEVE_THROW_IF_NOT(o->combination.empty(), "--combination belongs to a cascade (--verifier cascade:DIR)");
      std::vector<float> scores = score_pairs(pairs, o->model, rv, o->dev, o->batch_size);
      if (o->max_balanced_accuracy) o->balanced = true;
      Calibration c = o->max_balanced_accuracy ? calibrate_balanced_accuracy(scores, positive)
                                               : calibrate_threshold(scores, positive, o->precision, o->balanced);
      SIEVE_THROW_IF_NOT(!o->out.empty() || rv.file, "give --out FILE to store a calibrated " << rv.name);
      std::string out = o->out.empty() ? rv.name : o->out;
      if (rv.cross) {
        // A cross-encoder keeps its threshold in its folder's sieve file.
        SIEVE_THROW_IF_NOT(o->out.empty(), "a cross-encoder's threshold is stored in its folder; leave out --out");
        CrossEncoderMeta meta = rv.cross->meta();
        meta.threshold = c.threshold;
        meta.cascade_fast_sha256.clear();  // a cascade band was calibrated with the old threshold
        meta.cascade_combination = {};
        write_cross_encoder_meta(rv.cross->dir(), meta);
        out = path_join(rv.cross->dir(), kCrossEncoderMetaFile);
      } else {
        rv.verifier->save_with_threshold(out, c.threshold);
      }
      nlohmann::json j = {{"threshold", c.threshold}, {"precision", c.precision}, {"recall", c.recall},
                          {"positives", c.positives}, {"negatives", c.negatives}, {"balanced", o->balanced},
                          {"target_reached", c.reached},
                          {"rule", o->max_balanced_accuracy ? "max_balanced_accuracy" : "target_precision"},
                          {"written", out}};
      std::printf("%s\n", j.dump().c_str());
      if (!c.reached) std::fprintf(stderr, "sieve: warning: no threshold reaches precision %.3f; stored the most precise one\n", o->precision);
    });
  }
  {
    auto path = std::make_shared<std::string>();
    auto* cmd = group->add_subcommand("info", "Describe a verifier file (JSON)");
    cmd->add_option("verifier", *path, "Verifier file")->required();
    on_run(cmd, [path] { std::printf("%s\n", describe(*Verifier::load(*path)).dump(2).c_str()); });
  }
}

}  // namespace sieve::cli
