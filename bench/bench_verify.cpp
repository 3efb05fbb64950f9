// Stage-2 benchmark (prints one JSON object; see docs/benchmarks.md):
//  - pairs/s of each verifier at m = 32 query tokens, n = 128 candidate tokens, d = 384, scoring
//    one query against K = 100 candidates per call, and of the map alone;
//  - with --index: per-query stage-2 latency over the top K of a real index (decode, map, verifier).
// Usage: bench_verify [--index DIR --queries FILE [--gate-files A,B]] [--k 100] [--seconds 2] [--threads 2]
//        [--verifiers F1,F4]
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <random>

#include "bench_util.h"
#include "eval/beir.h"
#include "sieve/encoder.h"
#include "sieve/pipeline.h"
#include "sieve/verify.h"
#include "verify/similarity_map.h"

#include <ATen/Parallel.h>

using namespace sieve;
using sieve::bench::Clock;
using sieve::bench::percentile;
using sieve::bench::since;

namespace {

TokenStates random_tokens(size_t len, size_t d, std::mt19937& rng) {
  std::normal_distribution<float> g;
  TokenStates t;
  t.length = len;
  t.values.resize(len * d);
  for (auto& v : t.values) v = g(rng);
  return t;
}

// Calls fn repeatedly for about `seconds`; returns calls per second.
template <class Fn>
double rate(double seconds, Fn&& fn) {
  fn();  // warm-up
  size_t calls = 0;
  auto t0 = Clock::now();
  do {
    fn();
    ++calls;
  } while (since(t0) < seconds);
  return calls / since(t0);
}

}  // namespace

// The gate's tiers on real queries: per K, each mode's stage 2 (reading what it reads, the maps,
// the verifier, the cross-encoder) p50 / p99, per candidate, and what the cascade sent.
nlohmann::json time_tiers(const Index& index, const std::vector<eval::Query>& queries, const std::string& cross_dir) {
  nlohmann::json out = {{"cross_encoder", cross_dir}};
  const VerifierContext ctx{index.stats().model_path, index.stats().model_identity};
  const std::vector<std::pair<std::string, std::string>> modes = {
      {"fast", gate_verifier_spec(GateMode::Fast, cross_dir, ctx.model_dir)},
      {"accurate", gate_verifier_spec(GateMode::Accurate, cross_dir, ctx.model_dir)},
      {"cascade", gate_verifier_spec(GateMode::Cascade, cross_dir, ctx.model_dir)}};
  for (size_t K : {size_t(10), size_t(100)}) {
    nlohmann::json byk;
    for (const auto& [mode, spec] : modes) {
      const ResolvedVerifier v = resolve_verifier(spec, ctx);
      PipelineParams pp;
      pp.candidates = K;
      pp.k = K;
      std::vector<double> stage2;
      size_t sent = 0, scored = 0;
      for (const auto& qq : queries) {
        Stage2Timing t;
        search_verified(index, v, qq.text, pp, &t);
        stage2.push_back(t.decode + t.map + t.verify + t.cross);
        sent += t.sent;
        scored += t.scored;
      }
      byk[mode] = {{"stage2_ms_p50", percentile(stage2, 50) * 1e3},
                   {"stage2_ms_p99", percentile(stage2, 99) * 1e3},
                   {"ms_per_candidate_p50", percentile(stage2, 50) * 1e3 / K}};
      if (v.cascade()) byk[mode]["sent_share"] = scored ? double(sent) / scored : 0.0;
      std::fprintf(stderr, "tiers K=%zu %s done\n", K, mode.c_str());
    }
    out["K" + std::to_string(K)] = byk;
  }
  return out;
}

int main(int argc, char** argv) {
  ensure_fast_blas(argv);
  tune_allocator();
  CLI::App app{"sieve stage-2 benchmark"};
  std::string index_dir, queries_path;
  size_t K = 100, max_queries = 100;
  double seconds = 2;
  int threads = 0, aten_threads = 0;
  app.add_option("--index", index_dir);
  app.add_option("--aten-threads", aten_threads, "override libtorch's intra-op threads (experiment)");
  app.add_option("--queries", queries_path);
  app.add_option("--k", K);
  app.add_option("--max-queries", max_queries);
  app.add_option("--seconds", seconds);
  app.add_option("--threads", threads);
  std::string only = "F0,F1,F2,F3,F4", gate_files;
  app.add_option("--gate-files", gate_files, "with --index: more verifier files for the index's model, timed like the gate");
  app.add_option("--verifiers", only, "comma-separated verifiers for the synthetic part (F3 takes seconds per call)");
  std::string tiers;
  app.add_option("--tiers", tiers, "with --index: a cross-encoder folder; times the gate modes fast (the model's "
                                   "gate), accurate (cross:DIR) and cascade (cascade:DIR) at K = 10 and 100");
  CLI11_PARSE(app, argc, argv);
  set_compute_threads(threads);
  if (aten_threads > 0) at::set_num_threads(aten_threads);
  nlohmann::json out;

  const size_t d = 384, m = 32, n = 128;
  std::mt19937 rng(1);
  TokenStates q = random_tokens(m, d, rng);
  std::vector<TokenStates> cands;
  for (size_t i = 0; i < K; ++i) cands.push_back(random_tokens(n, d, rng));
  std::vector<const TokenStates*> ptrs;
  for (auto& c : cands) ptrs.push_back(&c);
  nlohmann::json synth = {{"m", m}, {"n", n}, {"d", d}, {"candidates_per_call", K}};
  double map_calls = rate(seconds, [&] { verify::query_maps(q, ptrs, d, 128); });
  synth["map_only"] = {{"pairs_per_second", map_calls * K}, {"ms_per_query", 1e3 / map_calls}};
  for (int k = 0; k < 5; ++k) {
    VerifierConfig c;
    c.kind = static_cast<VerifierKind>(k);
    if (only.find(verifier_kind_name(c.kind)) == std::string::npos) continue;
    c.encoder_dim = d;
    auto v = Verifier::create(c);
    double calls = rate(seconds, [&] { v->score(q, ptrs); });
    synth[verifier_kind_name(c.kind)] = {{"pairs_per_second", calls * K}, {"ms_per_query", 1e3 / calls},
                                         {"parameters", v->parameter_count()}};
    std::fprintf(stderr, "%s done\n", verifier_kind_name(c.kind));
  }
  out["synthetic"] = synth;

  if (!index_dir.empty()) {
    auto index = Index::open(index_dir);
    auto queries = eval::read_queries(queries_path);
    if (queries.size() > max_queries) queries.resize(max_queries);
    nlohmann::json real = {{"index", index_dir}, {"queries", queries.size()}, {"K", K}};
    // F1 and F4 (random weights: the cost) as configured by default, and the model's shipped gate.
    std::vector<std::pair<std::string, std::shared_ptr<const Verifier>>> verifiers;
    for (VerifierKind kind : {VerifierKind::F1, VerifierKind::F4}) {
      VerifierConfig c;
      c.kind = kind;
      c.encoder_dim = index->stats().dim;
      c.encoder_identity = index->stats().model_identity;
      verifiers.emplace_back(verifier_kind_name(kind), Verifier::create(c));
    }
    ResolvedVerifier gate = resolve_verifier("default", {index->stats().model_path, index->stats().model_identity});
    if (gate.verifier) verifiers.emplace_back("gate", std::move(gate.verifier));
    for (size_t at = 0; !gate_files.empty() && at != std::string::npos;) {
      const size_t comma = gate_files.find(',', at);
      const std::string f = gate_files.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
      verifiers.emplace_back(f, load_verifier_for_model(f, index->stats().model_path));
      at = comma == std::string::npos ? comma : comma + 1;
    }
    // One untimed pass first: the candidates' pages of the token store are then mapped and in
    // memory, as in a running service (the first touch of a page costs a fault per 4 KB).
    {
      PipelineParams pp;
      pp.candidates = K;
      for (const auto& qq : queries) search_verified(*index, *verifiers[0].second, qq.text, pp);
    }
    real["warm_up"] = "one untimed pass over the queries";
    for (const auto& [name, v] : verifiers) {
      PipelineParams pp;
      pp.candidates = K;
      std::vector<double> decode, map, verify, stage2, total;
      for (const auto& qq : queries) {
        Stage2Timing t;
        auto t0 = Clock::now();
        search_verified(*index, *v, qq.text, pp, &t);
        total.push_back(since(t0));
        decode.push_back(t.decode);
        map.push_back(t.map);
        verify.push_back(t.verify);
        stage2.push_back(t.decode + t.map + t.verify);
      }
      real[name] = {
          {"max_tokens", v->config().max_tokens},
          {"decode_ms_p50", percentile(decode, 50) * 1e3}, {"decode_ms_p99", percentile(decode, 99) * 1e3},
          {"map_ms_p50", percentile(map, 50) * 1e3}, {"map_ms_p99", percentile(map, 99) * 1e3},
          {"verifier_ms_p50", percentile(verify, 50) * 1e3}, {"verifier_ms_p99", percentile(verify, 99) * 1e3},
          {"stage2_ms_p50", percentile(stage2, 50) * 1e3}, {"stage2_ms_p99", percentile(stage2, 99) * 1e3},
          {"two_stage_query_ms_p50", percentile(total, 50) * 1e3}, {"two_stage_query_ms_p99", percentile(total, 99) * 1e3}};
      std::fprintf(stderr, "index %s done\n", name.c_str());
    }
    out["index"] = real;
    if (!tiers.empty()) out["tiers"] = time_tiers(*index, queries, tiers);
  }
  std::printf("%s\n", out.dump(2).c_str());
  return 0;
}
