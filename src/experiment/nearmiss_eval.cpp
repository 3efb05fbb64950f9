#include "experiment/nearmiss_eval.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <unordered_map>

#include "core/log.h"
#include "eval/report.h"
#include "index/token_codec.h"
#include "index/token_store.h"
#include "sieve/error.h"

namespace sieve::experiment {
namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

// The pairs sorted into positives and near-misses; every text gets an id for one encoding pass.
struct PairSet {
  std::vector<std::string> texts;
  struct Pair {
    size_t q, c;            // text ids
    std::string category;
  };
  std::vector<Pair> positives, nearmisses;
  std::vector<size_t> ref_positive;  // per near-miss: index of the positive of the same q, or SIZE_MAX
  size_t ignored = 0;
  bool identity = false;

  size_t id(const std::string& t, std::unordered_map<std::string, size_t>& ids) {
    auto [it, fresh] = ids.emplace(t, texts.size());
    if (fresh) texts.push_back(t);
    return it->second;
  }
};

PairSet sort_pairs(const std::vector<eval::SentencePair>& pairs, const NearMissEvalOptions& opt) {
  PairSet s;
  std::unordered_map<std::string, size_t> ids;
  const size_t n = opt.max_pairs > 0 ? std::min(opt.max_pairs, pairs.size()) : pairs.size();
  for (size_t i = 0; i < n; ++i) {
    const auto& p = pairs[i];
    const std::string cat = lower(p.category.empty() ? p.label : p.category);
    if (contains(opt.ignore_categories, cat)) {
      ++s.ignored;
      continue;
    }
    PairSet::Pair pr{s.id(p.sentence1, ids), s.id(p.sentence2, ids), cat.empty() ? "near_miss" : cat};
    (contains(opt.positive_categories, cat) ? s.positives : s.nearmisses).push_back(pr);
  }
  SIEVE_THROW_IF_NOT(!s.nearmisses.empty(), "the pairs hold no near-miss (every pair is a positive or ignored)");
  if (s.positives.empty()) {
    // The paper's test set has no positives; the identity pair (q, q) is the one the gate must accept.
    s.identity = true;
    std::set<size_t> seen;
    for (const auto& nm : s.nearmisses)
      if (seen.insert(nm.q).second) s.positives.push_back({nm.q, nm.q, "identity"});
  }
  std::unordered_map<size_t, size_t> first_positive;
  for (size_t i = 0; i < s.positives.size(); ++i) first_positive.emplace(s.positives[i].q, i);
  for (const auto& nm : s.nearmisses) {
    auto it = first_positive.find(nm.q);
    s.ref_positive.push_back(it == first_positive.end() ? SIZE_MAX : it->second);
  }
  return s;
}

// Scores of (q, c) pairs, grouped by q so that a verifier reads each query's candidates in one call.
std::vector<double> score_all(const std::vector<std::pair<size_t, size_t>>& pairs, const Embeddings& e,
                              const std::vector<TokenStates>& stored, const std::vector<std::string>& texts,
                              const Scorer& scorer, size_t batch_size) {
  std::vector<double> out(pairs.size());
  const Verifier* verifier = scorer.verifier;
  if (scorer.cross) {
    std::vector<std::pair<std::string, std::string>> text_pairs;
    text_pairs.reserve(pairs.size());
    for (const auto& [q, c] : pairs) text_pairs.emplace_back(texts[q], texts[c]);
    const std::vector<float> s = scorer.cross->score_pairs(text_pairs, batch_size);
    std::copy(s.begin(), s.end(), out.begin());
    return out;
  }
  if (!verifier) {
    for (size_t i = 0; i < pairs.size(); ++i) {
      const float* a = &e.pooled[pairs[i].first * e.dim];
      const float* b = &e.pooled[pairs[i].second * e.dim];
      double dot = 0;
      for (size_t h = 0; h < e.dim; ++h) dot += double(a[h]) * b[h];
      out[i] = dot;
    }
    return out;
  }
  std::map<size_t, std::vector<size_t>> by_query;
  for (size_t i = 0; i < pairs.size(); ++i) by_query[pairs[i].first].push_back(i);
  for (const auto& [q, rows] : by_query) {
    std::vector<const TokenStates*> cands;
    for (size_t r : rows) cands.push_back(&stored[pairs[r].second]);
    std::vector<float> s = verifier->score(e.tokens[q], cands);
    for (size_t k = 0; k < rows.size(); ++k) out[rows[k]] = s[k];
  }
  if (scorer.cascade) {
    std::vector<std::pair<std::string, std::string>> text_pairs;
    std::vector<float> f(out.begin(), out.end());
    for (const auto& [q, c] : pairs) text_pairs.emplace_back(texts[q], texts[c]);
    apply_cascade(*scorer.cascade, text_pairs, f, batch_size);
    std::copy(f.begin(), f.end(), out.begin());
  }
  return out;
}

std::vector<double> pick(const std::vector<double>& v, size_t parity) {
  std::vector<double> out;
  for (size_t i = parity; i < v.size(); i += 2) out.push_back(v[i]);
  return out;
}

}  // namespace

NearMissEval evaluate_nearmisses(const std::string& model_dir, const std::vector<eval::SentencePair>& pairs,
                                 const std::vector<Scorer>& scorers, const NearMissEvalOptions& opt) {
  PairSet s = sort_pairs(pairs, opt);
  NearMissEval out;
  out.positives = s.positives.size();
  out.nearmisses = s.nearmisses.size();
  out.ignored = s.ignored;
  out.identity_positives = s.identity;

  bool tokens = false;
  for (const auto& sc : scorers) tokens = tokens || sc.verifier != nullptr;
  auto enc = Encoder::load(model_dir, opt.encoder);
  EncodeCall call;
  call.batch_size = opt.batch_size;
  call.token_states = tokens;
  log_info("encoding " + std::to_string(s.texts.size()) + " texts");
  const Embeddings e = enc->encode(s.texts, call);
  // The candidates' token states as an index stores them: L2-normalised rows through the codec.
  std::vector<TokenStates> coded;
  if (tokens && !opt.token_codec.empty()) {
    coded = e.tokens;
    for (auto& t : coded) index::normalize_rows(t.values.data(), t.length, e.dim);
    auto codec = index::TokenCodec::create(index::TokenCodec::factory_for(opt.token_codec, e.dim), e.dim);
    index::train_token_codec(*codec, coded, e.dim, opt.codec_train_tokens);
    out.token_codec = codec->factory();
    out.token_code_bytes = codec->code_size();
    std::vector<uint8_t> codes;
    for (auto& t : coded) {
      codes.resize(t.length * codec->code_size());
      codec->encode(t.length, t.values.data(), codes.data());
      codec->decode(t.length, codes.data(), t.values.data());
    }
  }
  const std::vector<TokenStates>& stored = coded.empty() ? e.tokens : coded;

  // All pairs to score: positives, near-misses, then the identity pair of every near-miss query
  // (the margin's reference when it has no paraphrase).
  std::vector<std::pair<size_t, size_t>> all;
  for (const auto& p : s.positives) all.push_back({p.q, p.c});
  for (const auto& p : s.nearmisses) all.push_back({p.q, p.c});
  for (const auto& p : s.nearmisses) all.push_back({p.q, p.q});
  const size_t np = s.positives.size(), nn = s.nearmisses.size();

  for (const auto& sc : scorers) {
    const std::vector<double> scores = score_all(all, e, stored, s.texts, sc, opt.batch_size);
    const std::vector<double> pos(scores.begin(), scores.begin() + np);
    const std::vector<double> neg(scores.begin() + np, scores.begin() + np + nn);
    std::vector<double> ref(nn);
    for (size_t i = 0; i < nn; ++i)
      ref[i] = s.ref_positive[i] != SIZE_MAX ? pos[s.ref_positive[i]] : scores[np + nn + i];

    ScorerResult r;
    r.name = sc.name;
    r.parameters = sc.cross ? sc.cross->parameter_count() : sc.verifier ? sc.verifier->parameter_count() : 0;
    r.positives = eval::mean_std(pos);
    // The threshold: the verifier's own calibrated gate, else the best balanced accuracy on the
    // even-numbered pairs, measured on the odd-numbered ones (never on the pairs that chose it).
    const double file_threshold = sc.cross      ? sc.cross->threshold()
                                  : sc.verifier ? sc.verifier->config().threshold
                                                : std::nan("");
    const bool from_file = !std::isnan(file_threshold);
    r.threshold = from_file ? file_threshold : eval::best_balanced_threshold(pick(pos, 0), pick(neg, 0));
    r.threshold_source = from_file ? "file" : "held-out half";
    const std::vector<double> test_pos = from_file ? pos : pick(pos, 1);
    const std::vector<double> test_neg = from_file ? neg : pick(neg, 1);
    r.accuracy = eval::accuracy_at(test_pos, test_neg, r.threshold);
    r.balanced_accuracy = eval::balanced_accuracy_at(test_pos, test_neg, r.threshold);

    auto category_result = [&](const std::string& name, const std::vector<size_t>& rows) {
      CategoryResult c;
      c.category = name;
      std::vector<double> v, test;
      size_t margin = 0;
      for (size_t i : rows) {
        v.push_back(neg[i]);
        if (from_file || i % 2 == 1) test.push_back(neg[i]);
        if (ref[i] >= neg[i] + opt.gamma) ++margin;
      }
      c.score = eval::mean_std(v);
      c.auc = eval::roc_auc(pos, v);
      size_t rejected = 0;
      for (double x : test) rejected += x < r.threshold;
      c.accuracy = test.empty() ? std::nan("") : double(rejected) / test.size();
      c.margin_rate = rows.empty() ? std::nan("") : double(margin) / rows.size();
      return c;
    };
    std::map<std::string, std::vector<size_t>> rows_of;
    std::vector<size_t> every(nn);
    for (size_t i = 0; i < nn; ++i) {
      rows_of[s.nearmisses[i].category].push_back(i);
      every[i] = i;
    }
    for (const auto& [cat, rows] : rows_of) r.categories.push_back(category_result(cat, rows));
    r.overall = category_result("overall", every);
    std::map<std::string, std::vector<size_t>> pos_rows;
    for (size_t i = 0; i < np; ++i) pos_rows[s.positives[i].category].push_back(i);
    for (const auto& [cat, rows] : pos_rows) {
      CategoryResult c;
      c.category = cat;
      std::vector<double> v;
      size_t accepted = 0, tested = 0;
      for (size_t i : rows) {
        v.push_back(pos[i]);
        if (from_file || i % 2 == 1) {
          ++tested;
          accepted += pos[i] >= r.threshold;
        }
      }
      c.score = eval::mean_std(v);
      c.auc = eval::roc_auc(v, neg);
      c.accuracy = tested == 0 ? std::nan("") : double(accepted) / tested;
      c.margin_rate = std::nan("");
      r.positive_categories.push_back(c);
    }
    out.scorers.push_back(std::move(r));
  }
  return out;
}

namespace {

nlohmann::json mean_std_json(const eval::MeanStd& m) { return {{"mean", m.mean}, {"std", m.std}, {"n", m.n}}; }

nlohmann::json category_json(const CategoryResult& c) {
  return {{"score", mean_std_json(c.score)}, {"auc", c.auc}, {"rejected", c.accuracy}, {"margin_rate", c.margin_rate}};
}

}  // namespace

nlohmann::json nearmiss_json(const NearMissEval& e) {
  nlohmann::json j;
  j["positives"] = e.positives;
  j["nearmisses"] = e.nearmisses;
  j["ignored"] = e.ignored;
  j["positive_pairs"] = e.identity_positives ? "identity (q, q)" : "paraphrase pairs";
  if (!e.token_codec.empty()) j["token_codec"] = {{"factory", e.token_codec}, {"bytes_per_token", e.token_code_bytes}};
  for (const auto& s : e.scorers) {
    nlohmann::json o;
    o["parameters"] = s.parameters;
    o["positives"] = mean_std_json(s.positives);
    for (const auto& c : s.categories) o["categories"][c.category] = category_json(c);
    o["overall"] = category_json(s.overall);
    for (const auto& c : s.positive_categories)
      o["positive_categories"][c.category] = {
          {"score", mean_std_json(c.score)}, {"auc", c.auc}, {"accepted", c.accuracy}};
    o["auc"] = s.overall.auc;
    o["threshold"] = s.threshold;
    o["threshold_source"] = s.threshold_source;
    o["accuracy"] = s.accuracy;
    o["balanced_accuracy"] = s.balanced_accuracy;
    j["scorers"][s.name] = std::move(o);
  }
  return j;
}

std::string nearmiss_markdown(const NearMissEval& e) {
  std::vector<std::string> header = {"Scorer", "Positives"};
  std::vector<std::string> cats;
  if (!e.scorers.empty())
    for (const auto& c : e.scorers[0].categories) cats.push_back(c.category);
  for (const auto& c : cats) header.push_back(c);
  for (const char* h : {"Overall", "AUC", "Acc", "Margin"}) header.push_back(h);
  eval::MarkdownTable t(header);
  for (const auto& s : e.scorers) {
    std::vector<std::string> row = {s.name, eval::fmt_mean_std(s.positives)};
    for (const auto& c : s.categories) row.push_back(eval::fmt_mean_std(c.score));
    row.push_back(eval::fmt_mean_std(s.overall.score));
    row.push_back(eval::fmt_num(s.overall.auc));
    row.push_back(eval::fmt_num(s.balanced_accuracy));
    row.push_back(eval::fmt_num(s.overall.margin_rate));
    t.add_row(row);
  }
  return t.str();
}

}  // namespace sieve::experiment
