// The self-contained search page served at GET / (no external resources).
#pragma once

#include <string>

namespace sieve::serve {

/// The HTML of the page: a query box, mode and gate/rerank switches, the hits with their stage-1
/// rank and score, verifier score and decision, and a click on a hit that shows its token map
/// (GET /v1/explain.svg). `?q=...&gate=1&rerank=1&map=1` runs a query on load.
const std::string& web_page();

}  // namespace sieve::serve
