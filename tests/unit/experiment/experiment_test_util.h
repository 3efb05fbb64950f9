// A tiny BEIR folder and model shared by the experiment tests, and independent references
// (brute-force cosine, naive nDCG) to check the library against.
#pragma once

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "support/fixtures.h"
#include "support/test_util.h"
#include "sieve/encoder.h"
#include "sieve/model.h"

namespace sieve::test {

/// 24 short documents, 6 queries, graded qrels (query "q6" has only a grade-0 judgement).
struct TinyBeir {
  std::string dir, model;
  std::vector<std::pair<std::string, std::string>> docs;     // id, text
  std::vector<std::pair<std::string, std::string>> queries;  // id, text
  std::map<std::string, std::map<std::string, int>> qrels;
};

inline TinyBeir make_tiny_beir(const std::string& root) {
  TinyBeir b;
  b.dir = root + "/beir";
  b.model = root + "/model";
  write_fixture_model(b.model, tiny_model_options(7));
  const char* words[] = {"the", "dog", "bit", "man", "cat", "sat", "on", "mat", "red", "car", "house",
                         "river", "tree", "city", "water", "light", "green", "small", "big", "old"};
  for (int i = 0; i < 24; ++i) {
    std::string t;
    for (int w = 0; w < 6; ++w) t += std::string(w ? " " : "") + words[(i * 7 + w * 3 + w * i) % 20];
    b.docs.push_back({"d" + std::to_string(i), t});
  }
  for (int i = 0; i < 6; ++i) {
    std::string t;
    for (int w = 0; w < 3; ++w) t += std::string(w ? " " : "") + words[(i * 5 + w * 4 + 1) % 20];
    b.queries.push_back({"q" + std::to_string(i + 1), t});
  }
  b.qrels["q1"] = {{"d3", 2}, {"d7", 1}};
  b.qrels["q2"] = {{"d0", 1}};
  b.qrels["q3"] = {{"d11", 3}, {"d12", 1}, {"d20", 2}};
  b.qrels["q4"] = {{"d5", 1}, {"d9", 0}};
  b.qrels["q5"] = {{"d23", 1}, {"d2", 1}};
  b.qrels["q6"] = {{"d1", 0}};
  ::mkdir(b.dir.c_str(), 0755);
  ::mkdir((b.dir + "/qrels").c_str(), 0755);
  std::ofstream c(b.dir + "/corpus.jsonl"), q(b.dir + "/queries.jsonl"), r(b.dir + "/qrels/test.tsv");
  for (const auto& [id, t] : b.docs) c << "{\"_id\": \"" << id << "\", \"title\": \"\", \"text\": \"" << t << "\"}\n";
  for (const auto& [id, t] : b.queries) q << "{\"_id\": \"" << id << "\", \"text\": \"" << t << "\"}\n";
  r << "query-id\tcorpus-id\tscore\n";
  for (const auto& [qid, rels] : b.qrels)
    for (const auto& [d, g] : rels) r << qid << "\t" << d << "\t" << g << "\n";
  return b;
}

/// Pooled unit keys of `texts` under `model`, each text encoded on its own (batch 1).
inline std::vector<std::vector<double>> keys_one_by_one(const std::string& model, const std::vector<std::string>& texts) {
  auto enc = Encoder::load(model);
  std::vector<std::vector<double>> out;
  for (const auto& t : texts) {
    Embeddings e = enc->encode({t});
    out.emplace_back(e.pooled.begin(), e.pooled.end());
  }
  return out;
}

inline double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

/// trec_eval's ndcg_cut.k written out: ranks by score desc, then doc id desc; gain = grade (> 0);
/// discount log2(rank + 1); ideal from all positive grades.
inline double naive_ndcg(std::vector<std::pair<double, std::string>> scored, const std::map<std::string, int>& rels,
                         size_t k) {
  std::sort(scored.begin(), scored.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second > b.second;
  });
  double dcg = 0, idcg = 0;
  for (size_t i = 0; i < std::min(k, scored.size()); ++i) {
    auto it = rels.find(scored[i].second);
    if (it != rels.end() && it->second > 0) dcg += it->second / std::log2(i + 2.0);
  }
  std::vector<int> grades;
  for (const auto& [d, g] : rels)
    if (g > 0) grades.push_back(g);
  std::sort(grades.rbegin(), grades.rend());
  for (size_t i = 0; i < std::min(k, grades.size()); ++i) idcg += grades[i] / std::log2(i + 2.0);
  return idcg > 0 ? dcg / idcg : 0.0;
}

}  // namespace sieve::test
