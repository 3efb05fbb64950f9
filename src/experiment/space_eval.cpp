#include "experiment/space_eval.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <unordered_map>

#include "core/file_util.h"
#include "eval/report.h"
#include "sieve/error.h"

namespace sieve::experiment {

std::vector<double> pair_cosines(const std::string& model_dir, const std::vector<eval::SentencePair>& pairs,
                                 const EncoderOptions& enc_opt, size_t batch_size) {
  std::vector<std::string> texts;
  std::unordered_map<std::string, size_t> ids;
  std::vector<std::pair<size_t, size_t>> idx;
  auto id = [&](const std::string& t) {
    auto [it, fresh] = ids.emplace(t, texts.size());
    if (fresh) texts.push_back(t);
    return it->second;
  };
  for (const auto& p : pairs) {
    const size_t a = id(p.sentence1);
    idx.push_back({a, id(p.sentence2)});
  }
  auto enc = Encoder::load(model_dir, enc_opt);
  EncodeCall call;
  call.batch_size = batch_size;
  const Embeddings e = enc->encode(texts, call);
  std::vector<double> out;
  out.reserve(idx.size());
  for (const auto& [a, b] : idx) {
    double dot = 0;
    for (size_t h = 0; h < e.dim; ++h) dot += double(e.pooled[a * e.dim + h]) * e.pooled[b * e.dim + h];
    out.push_back(dot);
  }
  return out;
}

namespace {

SpaceCategory summarise(const std::string& name, const std::vector<double>& a, const std::vector<double>& b,
                        const SpaceEvalOptions& opt) {
  SpaceCategory c;
  c.category = name;
  c.n = a.size();
  std::vector<double> d(a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    d[i] = b[i] - a[i];
    if (d[i] < -opt.tie_band) ++c.b_wins;
    else if (d[i] > opt.tie_band) ++c.a_wins;
    else ++c.ties;
  }
  c.a = eval::mean_std(a);
  c.b = eval::mean_std(b);
  c.delta = eval::mean_std(d);
  c.b_win_rate = c.n ? double(c.b_wins) / c.n : 0.0;
  c.hist_a = eval::histogram(a, -1.0, 1.0, opt.bins);
  c.hist_b = eval::histogram(b, -1.0, 1.0, opt.bins);
  return c;
}

nlohmann::json category_json(const SpaceCategory& c) {
  auto ms = [](const eval::MeanStd& m) { return nlohmann::json{{"mean", m.mean}, {"std", m.std}}; };
  return {{"n", c.n}, {"model_a", ms(c.a)}, {"model_b", ms(c.b)}, {"delta", ms(c.delta)},
          {"b_wins", c.b_wins}, {"a_wins", c.a_wins}, {"ties", c.ties}, {"b_win_rate", c.b_win_rate}};
}

std::string file_safe(const std::string& s) {
  std::string out;
  for (char c : s) out += std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' ? c : '_';
  return out;
}

}  // namespace

SpaceEval evaluate_space(const std::string& model_a, const std::string& model_b,
                         const std::vector<eval::SentencePair>& all_pairs, const SpaceEvalOptions& opt) {
  std::vector<eval::SentencePair> pairs(all_pairs.begin(),
                                        opt.max_pairs > 0 && opt.max_pairs < all_pairs.size()
                                            ? all_pairs.begin() + opt.max_pairs
                                            : all_pairs.end());
  SIEVE_THROW_IF_NOT(!pairs.empty(), "no pairs to analyse");
  const std::vector<double> ca = pair_cosines(model_a, pairs, opt.encoder, opt.batch_size);
  const std::vector<double> cb = pair_cosines(model_b, pairs, opt.encoder, opt.batch_size);
  std::map<std::string, std::pair<std::vector<double>, std::vector<double>>> by_cat;
  std::vector<double> na, nb;  // near-misses only
  for (size_t i = 0; i < pairs.size(); ++i) {
    const auto& p = pairs[i];
    std::string cat = !p.category.empty() ? p.category : !p.label.empty() ? p.label : "all";
    for (char& ch : cat) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    auto& slot = by_cat[cat];
    slot.first.push_back(ca[i]);
    slot.second.push_back(cb[i]);
    if (std::find(opt.positive_categories.begin(), opt.positive_categories.end(), cat) ==
        opt.positive_categories.end()) {
      na.push_back(ca[i]);
      nb.push_back(cb[i]);
    }
  }
  SpaceEval s;
  for (const auto& [cat, v] : by_cat) s.categories.push_back(summarise(cat, v.first, v.second, opt));
  s.overall = summarise("overall", na, nb, opt);
  return s;
}

nlohmann::json space_json(const SpaceEval& s) {
  nlohmann::json j;
  for (const auto& c : s.categories) j["categories"][c.category] = category_json(c);
  j["overall"] = category_json(s.overall);
  return j;
}

std::string space_markdown(const SpaceEval& s) {
  eval::MarkdownTable t({"Perturbation", "N", "A", "B", "Δ (B − A)", "B wins"});
  auto row = [&](const SpaceCategory& c) {
    t.add_row({c.category, std::to_string(c.n), eval::fmt_mean_std(c.a), eval::fmt_mean_std(c.b),
               eval::fmt_signed(c.delta.mean) + " ± " + eval::fmt_num(c.delta.std),
               eval::fmt_num(100.0 * c.b_win_rate, 1) + "%"});
  };
  for (const auto& c : s.categories) row(c);
  row(s.overall);
  return t.str();
}

void write_space_report(const SpaceEval& s, const std::string& out_dir) {
  std::filesystem::create_directories(out_dir);
  write_file_atomic(path_join(out_dir, "space.json"), space_json(s).dump(2) + "\n");
  write_file_atomic(path_join(out_dir, "space.md"),
                    "# Pooled-space analysis: Model A vs Model B\n\nCosine of each pair (lower separates the "
                    "near-miss better); B wins when cos_B < cos_A - 0.01. \"overall\" is the near-miss "
                    "categories together (paraphrase-like categories are listed but left out of it).\n\n" +
                        space_markdown(s));
  auto plot = [&](const SpaceCategory& c) {
    write_file_atomic(path_join(out_dir, "hist_" + file_safe(c.category) + ".svg"),
                      eval::svg_histograms("Pooled cosine: " + c.category + " (n = " + std::to_string(c.n) + ")",
                                           {{"Model A", c.hist_a}, {"Model B", c.hist_b}}, "cosine"));
  };
  for (const auto& c : s.categories) plot(c);
  plot(s.overall);
}

}  // namespace sieve::experiment
