// hit_json: a search hit as JSON, one shape for the CLI's output and the server's answers.
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "sieve/pipeline.h"

namespace sieve {
namespace {

using ojson = nlohmann::ordered_json;

// A score as JSON: exact, or rounded to `digits` significant digits (NaN: null).
ojson number(double v, int digits) {
  if (std::isnan(v)) return nullptr;
  if (digits <= 0) return v;
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.*g", digits, v);
  return std::strtod(buf, nullptr);
}

void add_lists(ojson& j, const Hit& h, int digits) {
  if (!std::isnan(h.dense_score)) {
    j[HitKeys::dense] = number(h.dense_score, digits);
    if (h.dense_rank > 0) j[HitKeys::dense_rank] = h.dense_rank;
  }
  if (!std::isnan(h.bm25_score)) {
    j[HitKeys::bm25] = number(h.bm25_score, digits);
    if (h.bm25_rank > 0) j[HitKeys::bm25_rank] = h.bm25_rank;
  }
}

void add_text(ojson& j, const Index& index, const Hit& h, const HitJsonOptions& o) {
  if (!o.text) return;
  const Document d = index.document(h.doc);
  j[HitKeys::title] = d.title;
  j[HitKeys::text] = d.text;
  if (!d.metadata.empty()) j[HitKeys::metadata] = ojson::parse(d.metadata);
  if (d.expires_at != 0) j[HitKeys::expires_at] = d.expires_at;
}

}  // namespace

ojson hit_json(const Index& index, const Hit& hit, size_t rank, const HitJsonOptions& options) {
  ojson j;
  j[HitKeys::rank] = rank;
  j[HitKeys::id] = hit.id;
  j[HitKeys::score] = number(hit.score, options.digits);
  add_lists(j, hit, options.digits);
  add_text(j, index, hit, options);
  return j;
}

ojson hit_json(const Index& index, const VerifiedHit& hit, size_t rank, const HitJsonOptions& options) {
  ojson j;
  j[HitKeys::rank] = rank;
  j[HitKeys::id] = hit.hit.id;
  j[HitKeys::stage1_score] = number(hit.hit.score, options.digits);
  j[HitKeys::stage1_rank] = hit.stage1_rank;
  j[HitKeys::verifier_score] = number(hit.verifier_score, options.digits);
  j[HitKeys::accepted] = hit.accepted;
  add_lists(j, hit.hit, options.digits);
  add_text(j, index, hit.hit, options);
  return j;
}

}  // namespace sieve
