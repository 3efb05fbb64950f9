// `sieve explain`: the cosine map of a query and a candidate, as JSON and (with --svg) as an SVG
// heatmap, with the stage-1 cosine and the verifier's score and decision.
#include <cmath>
#include <cstdio>

#include "cli/cli_common.h"
#include "core/log.h"
#include "sieve/error.h"
#include "sieve/model.h"
#include "core/file_util.h"
#include "sieve/index.h"
#include "sieve/verify.h"

namespace sieve::cli {

void register_explain(CLI::App& app) {
  struct Opts {
    std::string model, verifier, query, candidate, svg;
    double threshold = std::nan("");
    DeviceFlags dev;
  };
  auto o = std::make_shared<Opts>();
  auto* cmd = app.add_subcommand(
      "explain", "Show why a candidate was accepted or rejected: the token-token cosine map (JSON + SVG heatmap)");
  cmd->add_option("-m,--model", o->model, std::string("Model directory or installed name (Hugging Face layout; default: ") + kDefaultModel + ")");
  cmd->add_option("--verifier", o->verifier,
                  std::string("Verifier file, or cosine, F0, F1, F2 (default: the verifier.safetensors beside the "
                              "model, else F1)") + kVerifierNames);
  cmd->add_option("query", o->query, "The query text")->required();
  cmd->add_option("candidate", o->candidate, "The candidate text")->required();
  cmd->add_option("--svg", o->svg, "Also write the heatmap as an SVG file here (default: no file)");
  cmd->add_option("--threshold", o->threshold, "Decision threshold (default: the verifier file's)");
  o->dev.add(cmd);
  on_run(cmd, [o] {
    o->model = resolve_model_dir(o->model);
    const ResolvedVerifier verifier = resolve_verifier(o->verifier, {o->model, ""});
    SIEVE_THROW_IF_NOT(!verifier.cross, (verifier.cascade() ? "a cascade's cross-encoder" : "a cross-encoder")
                                            << " reads the texts, not a token map: there is no map to explain (sieve "
                                               "verify score gives its score; --verifier default explains the fast tier)");
    auto enc = Encoder::load(o->model, o->dev.options());
    Explanation x = explain_pair(*enc, verifier.verifier.get(), o->query, o->candidate, o->threshold);
    if (!o->svg.empty()) {
      write_file_atomic(o->svg, explanation_svg(x));
      log_info("wrote the heatmap to " + o->svg);
    }
    std::printf("%s\n", explanation_json(x, o->svg).c_str());
  });
}

}  // namespace sieve::cli
