// `sieve explain`: the cosine map of a query and a candidate, as JSON and as an SVG heatmap, with
// the stage-1 cosine and the verifier's score and decision.
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli/cli_common.h"
#include "sieve/model.h"
#include "core/file_util.h"
#include "sieve/index.h"
#include "sieve/verify.h"

namespace sieve::cli {

void register_explain(CLI::App& app) {
  struct Opts {
    std::string model, verifier, query, candidate, svg = "explain.svg";
    double threshold = std::nan("");
    DeviceFlags dev;
  };
  auto o = std::make_shared<Opts>();
  auto* cmd = app.add_subcommand(
      "explain", "Show why a candidate was accepted or rejected: the token-token cosine map (JSON + SVG heatmap)");
  cmd->add_option("-m,--model", o->model, "Model directory (Hugging Face layout; default: the embedded sieve-mini)");
  cmd->add_option("--verifier", o->verifier,
                  "Verifier file, or cosine, F0, F1, F2 (default: sieve-mini's verifier when no --model is given, else F1)");
  cmd->add_option("query", o->query, "The query text")->required();
  cmd->add_option("candidate", o->candidate, "The candidate text")->required();
  cmd->add_option("--svg", o->svg, "Where to write the heatmap ('' = nowhere)")->capture_default_str();
  cmd->add_option("--threshold", o->threshold, "Decision threshold (default: the verifier file's)");
  o->dev.add(cmd);
  on_run(cmd, [o] {
    if (o->verifier.empty()) o->verifier = default_verifier(o->model, "F1");
    const bool by_cosine = o->verifier == "cosine";  // the pooled stage-1 cosine as the verifier
    o->model = resolve_model_dir(o->model);
    auto verifier = Verifier::load(by_cosine ? "F1" : o->verifier, model_identity(o->model));
    auto enc = Encoder::load(o->model, o->dev.options());
    EncodeCall call;
    call.token_states = true;
    Embeddings e = enc->encode({o->query, o->candidate}, call);
    double cosine = 0;
    for (size_t h = 0; h < e.dim; ++h) cosine += double(e.pooled[h]) * e.pooled[e.dim + h];
    const size_t cap = verifier->config().max_tokens;
    float score = by_cosine ? static_cast<float>(cosine) : verifier->score(e.tokens[0], {&e.tokens[1]})[0];
    double threshold = std::isnan(o->threshold) ? verifier->config().threshold : o->threshold;
    const std::string name = by_cosine ? "cosine" : verifier_kind_name(verifier->config().kind);
    CosineMap map = cosine_map(e.tokens[0], e.tokens[1], cap);
    std::vector<std::string> qt(e.encodings[0].tokens.begin(), e.encodings[0].tokens.begin() + map.m);
    std::vector<std::string> ct(e.encodings[1].tokens.begin(), e.encodings[1].tokens.begin() + map.n);
    std::string decision = std::isnan(threshold) ? "no threshold" : (score >= threshold ? "accept" : "reject");
    char title[256];
    std::snprintf(title, sizeof title, "stage-1 cosine %.3f   %s score %.3f   %s", cosine, name.c_str(), score,
                  std::isnan(threshold) ? "(no threshold)" : (decision + " at " + std::to_string(threshold).substr(0, 5)).c_str());
    if (!o->svg.empty()) write_file_atomic(o->svg, render_map_svg(map, qt, ct, title));
    nlohmann::json rows = nlohmann::json::array();
    for (size_t i = 0; i < map.m; ++i) {
      nlohmann::json row = nlohmann::json::array();
      for (size_t j = 0; j < map.n; ++j) row.push_back(std::round(map.values[i * map.n + j] * 1e4) / 1e4);
      rows.push_back(row);
    }
    nlohmann::json j = {{"query_tokens", qt}, {"candidate_tokens", ct}, {"map", rows},
                        {"stage1_cosine", cosine}, {"verifier", name},
                        {"score", score}, {"decision", decision}};
    if (!std::isnan(threshold)) j["threshold"] = threshold;
    if (!o->svg.empty()) j["svg"] = o->svg;
    std::printf("%s\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  });
}

}  // namespace sieve::cli
