// The stage-1 search a model folder recommends (config_sentence_transformers.json "sieve" ->
// "search"), and the names of the search modes and fusions.
#include <cmath>
#include <nlohmann/json.hpp>

#include "core/file_util.h"
#include "index/manifest.h"
#include "index/shard_set.h"
#include "sieve/error.h"
#include "sieve/index.h"
#include "sieve/model.h"

namespace sieve {

const char* search_mode_name(SearchMode m) {
  switch (m) {
    case SearchMode::Dense: return "dense";
    case SearchMode::Bm25: return "bm25";
    case SearchMode::Hybrid: return "hybrid";
  }
  return "?";
}

SearchMode search_mode_from_name(const std::string& name) {
  if (name == "dense") return SearchMode::Dense;
  if (name == "bm25") return SearchMode::Bm25;
  if (name == "hybrid") return SearchMode::Hybrid;
  SIEVE_THROW("unknown search mode '" << name << "' (dense, bm25, hybrid)");
}

const char* fusion_name(Fusion f) {
  switch (f) {
    case Fusion::Weighted: return "weighted";
    case Fusion::Zscore: return "zscore";
    case Fusion::Rrf: break;
  }
  return "rrf";
}

Fusion fusion_from_name(const std::string& name) {
  if (name == "rrf") return Fusion::Rrf;
  if (name == "weighted") return Fusion::Weighted;
  if (name == "zscore") return Fusion::Zscore;
  SIEVE_THROW("unknown fusion '" << name << "' (rrf, weighted, zscore)");
}

bool fusion_uses_weight(Fusion f) { return f == Fusion::Weighted || f == Fusion::Zscore; }

void SearchRecommendation::apply(SearchParams& p) const {
  p.mode = mode;
  p.fusion = fusion;
  p.rrf_k = rrf_k;
  p.dense_weight = dense_weight;
  p.weight_slope = weight_slope;
  if (depth > 0) p.depth = depth;
}

namespace {

nlohmann::json read_json(const std::string& path) {
  try {
    return nlohmann::json::parse(read_file(path));
  } catch (const nlohmann::json::exception& e) {
    SIEVE_THROW(path << ": not valid JSON (" << e.what() << ")");
  }
}

// Reads a "search" object ({"mode", "fusion", "rrf_k", "dense_weight", "dense_weight_slope",
// "fusion_depth", "note"}).
SearchRecommendation parse_search(const nlohmann::json& s, const std::string& where) {
  SIEVE_THROW_IF_NOT(s.is_object(), where << " must be an object");
  SearchRecommendation r;
  try {
    r.declared = true;
    if (s.contains("mode")) r.mode = search_mode_from_name(s["mode"].get<std::string>());
    if (s.contains("fusion")) r.fusion = fusion_from_name(s["fusion"].get<std::string>());
    if (s.contains("rrf_k")) r.rrf_k = s["rrf_k"].get<double>();
    if (s.contains("dense_weight")) r.dense_weight = s["dense_weight"].get<double>();
    if (s.contains("dense_weight_slope")) r.weight_slope = s["dense_weight_slope"].get<double>();
    if (s.contains("fusion_depth")) {
      const double d = s["fusion_depth"].get<double>();
      SIEVE_THROW_IF_NOT(d >= 0 && d <= 100000 && d == static_cast<double>(static_cast<size_t>(d)),
                         where << ": fusion_depth must be a whole number in [0, 100000]");
      r.depth = static_cast<size_t>(d);
    }
    if (s.contains("note")) r.note = s["note"].get<std::string>();
  } catch (const nlohmann::json::exception& e) {
    SIEVE_THROW(where << ": " << e.what());
  } catch (const Error& e) {
    SIEVE_THROW(where << ": " << e.what());
  }
  SIEVE_THROW_IF_NOT(r.dense_weight >= 0 && r.dense_weight <= 1, where << ": dense_weight must lie in [0, 1]");
  SIEVE_THROW_IF_NOT(r.rrf_k >= 0, where << ": rrf_k must be >= 0");
  SIEVE_THROW_IF_NOT(std::isfinite(r.weight_slope) && std::fabs(r.weight_slope) <= 10,
                     where << ": dense_weight_slope must lie in [-10, 10]");
  return r;
}

}  // namespace

SearchRecommendation recommended_search(const std::string& model_dir) {
  // The sieve file beside a checkpoint installed from elsewhere (models/NAME.sieve.json) comes
  // first; a folder sieve wrote itself declares it in config_sentence_transformers.json.
  const std::string side = model_source_file(model_dir);
  if (is_file(side)) {
    const nlohmann::json j = read_json(side);
    if (j.is_object() && j.contains("search")) return parse_search(j["search"], side + ": \"search\"");
  }
  const std::string path = path_join(model_dir, "config_sentence_transformers.json");
  if (!is_file(path)) return {};
  const nlohmann::json j = read_json(path);
  if (!j.is_object() || !j.contains("sieve") || !j["sieve"].is_object() || !j["sieve"].contains("search")) return {};
  return parse_search(j["sieve"]["search"], path + ": \"sieve\".\"search\"");
}

SearchRecommendation recommended_search_for_index(const std::string& index_dir, const std::string& model_dir) {
  if (!model_dir.empty()) return recommended_search(resolve_model_dir(model_dir));  // a name or a folder
  if (is_shard_set(index_dir)) return recommended_search(index::read_shard_set_manifest(index_dir).model_path);
  // No manifest: nothing to recommend; opening the index reports what is wrong with it.
  if (!is_file(path_join(index_dir, index::kManifestFile))) return {};
  const index::Manifest m = index::read_manifest(index_dir, index::kManifestFile);
  return recommended_search(m.model_path);
}

}  // namespace sieve
