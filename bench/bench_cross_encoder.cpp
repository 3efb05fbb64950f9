// Cost of stage 2 per candidate: the token-map verifiers F1 and F4 (untrained: timing only) and
// the gate shipped for the model (F2 with its cue and order penalties, which read token ids)
// against the cross-encoder, at K candidates per query, on sentence-length candidates (SciFact
// claims, ~20 tokens) and abstract-length ones (SciFact abstracts, cut at 256 tokens). One JSON
// object on stdout (docs/benchmarks.md).
//
// F1 and F4 read token states that stage 1 already holds (the index stores the candidates', the
// query's come from its dense search), so their cost is the map and the verifier; the
// cross-encoder runs BERT over every (query, candidate) pair, tokenization included.
//
// Usage: bench_cross_encoder [--model DIR] [--cross DIR] [--scifact DIR] [--k 100] [--queries 5]
//                            [--threads 2]
// Without --cross, a cross-encoder is made from --model with a seeded head (one training step).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <tuple>
#include <fstream>
#include <nlohmann/json.hpp>

#include "bench_util.h"
#include "core/file_util.h"
#include "eval/beir.h"
#include "index/corpus_reader.h"
#include "sieve/cross_encoder.h"
#include "sieve/encoder.h"
#include "sieve/index.h"
#include "sieve/model.h"
#include "sieve/train.h"
#include "sieve/verify.h"

using namespace sieve;
using sieve::bench::Clock;
using sieve::bench::since;
using nlohmann::json;

namespace {

// The first `n` claims of SciFact, and the first `n` documents as the encoder reads them (title and text).
std::vector<std::string> scifact_claims(const std::string& dir, size_t n) {
  std::vector<std::string> out;
  for (const auto& q : eval::read_queries(dir + "/queries.jsonl")) {
    if (out.size() >= n) break;
    out.push_back(q.text);
  }
  return out;
}
std::vector<std::string> scifact_documents(const std::string& dir, size_t n) {
  std::vector<std::string> out;
  index::CorpusReader reader(dir + "/corpus.jsonl");
  Document d;
  while (out.size() < n && reader.next(d)) out.push_back(encoder_text(d));
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  ensure_fast_blas(argv);
  tune_allocator();
  CLI::App app{"sieve stage-2 cost: F1, F4 and the cross-encoder per candidate"};
  std::string model = "all-MiniLM-L6-v2", cross_dir, gate = "default", scifact = "/work/shared/data/retrieval/scifact";
  size_t K = 100, nq = 5, batch = 32;
  int threads = 2;
  app.add_option("--model", model, "Encoder (token states for F1/F4; the cross-encoder's base without --cross)");
  app.add_option("--cross", cross_dir, "Cross-encoder folder (default: one made from --model with a seeded head)");
  app.add_option("--scifact", scifact, "BEIR SciFact folder (queries.jsonl, corpus.jsonl)");
  app.add_option("--gate", gate, "A verifier file timed as \"gate\" (default: the one shipped for --model, if any; none: skip)");
  app.add_option("--k", K, "Candidates per query");
  app.add_option("--queries", nq, "Queries timed per setting");
  app.add_option("--batch-size", batch, "Cross-encoder pairs per forward pass");
  app.add_option("--threads", threads, "Compute threads");
  CLI11_PARSE(app, argc, argv);
  set_compute_threads(threads);
  model = resolve_model_dir(model);
  if (gate == "default") gate = default_verifier(model, "");
  if (gate == "none") gate.clear();

  const std::vector<std::string> claims = scifact_claims(scifact, nq + K);
  const std::vector<std::string> docs = scifact_documents(scifact, K);
  if (claims.size() < nq + K || docs.size() < K) {
    std::fprintf(stderr, "bench_cross_encoder: %s has too few queries or documents\n", scifact.c_str());
    return 1;
  }
  if (cross_dir.empty()) {
    const std::string tmp = "/tmp/sieve_bench_cross";
    std::ofstream(tmp + ".tsv") << "sentence1\tsentence2\tlabel\n" << claims[0] << "\t" << claims[0] << "\t1\n"
                                << claims[0] << "\t" << claims[1] << "\t0\n";
    CrossEncoderTrainOptions o;
    o.model_dir = model;
    o.train_path = tmp + ".tsv";
    o.common.out_dir = tmp;
    o.common.steps = 1;
    o.common.batch_size = 2;
    o.common.progress = false;
    o.common.threads = threads;
    cross_dir = train_cross_encoder(o).final_dir;
  }
  EncoderOptions eo;
  eo.threads = threads;
  auto enc = Encoder::load(model, eo);
  CrossEncoderOptions co;
  co.threads = threads;
  auto cross = CrossEncoder::load(cross_dir, co);

  const std::vector<std::string> queries(claims.begin(), claims.begin() + static_cast<long>(nq));
  EncodeCall call;
  call.token_states = true;
  const Embeddings qe = enc->encode(queries, call);

  json out = {{"model", model}, {"cross_encoder", cross_dir}, {"gate", gate}, {"K", K}, {"queries", nq}, {"threads", threads},
              {"cross_batch_size", batch}, {"max_length_encoder", enc->max_length()},
              {"max_length_cross", cross->max_length()}};
  double q_tokens = 0;
  for (const auto& t : qe.tokens) q_tokens += static_cast<double>(t.length);
  out["query_tokens_mean"] = q_tokens / static_cast<double>(nq);

  // Abstracts cut at the encoder's cap (256 tokens) in the text itself, so that the cross-encoder
  // reads the same candidate tokens as F1/F4 do (it could read up to 512 with the query).
  std::vector<std::string> cut_docs;
  for (const auto& d : docs) {
    EncodeOptions cap;
    cap.max_length = enc->max_length();
    const Encoding e = enc->tokenizer().encode(d, cap);
    size_t end = 0;
    for (const auto& [b, x] : e.offsets) end = std::max(end, x);
    cut_docs.push_back(d.substr(0, end));
  }
  struct Setting {
    const char* name;
    std::vector<std::string> texts;
  };
  const std::vector<Setting> settings = {
      {"sentence", std::vector<std::string>(claims.begin() + static_cast<long>(nq), claims.begin() + static_cast<long>(nq + K))},
      {"abstract", cut_docs}};
  for (const auto& s : settings) {
    const Embeddings ce = enc->encode(s.texts, call);
    std::vector<const TokenStates*> ptrs;
    double c_tokens = 0;
    for (const auto& t : ce.tokens) {
      ptrs.push_back(&t);
      c_tokens += static_cast<double>(t.length);
    }
    json js = {{"candidate_tokens_mean", c_tokens / static_cast<double>(K)}};
    struct Scorer {
      std::string name;
      std::unique_ptr<Verifier> v;
    };
    std::vector<Scorer> scorers;
    for (auto [name, kind, max_tokens] : {std::tuple<const char*, VerifierKind, size_t>{"F1", VerifierKind::F1, 256},
                                          {"F4", VerifierKind::F4, 128},
                                          {"F4_max_tokens_256", VerifierKind::F4, 256}}) {
      VerifierConfig c;
      c.kind = kind;
      c.max_tokens = max_tokens;
      c.encoder_dim = enc->dim();
      scorers.push_back({name, Verifier::create(c)});
    }
    if (!gate.empty()) scorers.push_back({"gate", load_verifier_for_model(gate, model)});
    for (auto& sc : scorers) {
      sc.v->score(qe.tokens[0], ptrs);  // warm-up
      auto t0 = Clock::now();
      for (size_t q = 0; q < nq; ++q) sc.v->score(qe.tokens[q], ptrs);
      const double sec = since(t0);
      js[sc.name] = {{"ms_per_query", 1e3 * sec / static_cast<double>(nq)},
                     {"ms_per_candidate", 1e3 * sec / static_cast<double>(nq * K)},
                     {"max_tokens", sc.v->config().max_tokens}};
      std::fprintf(stderr, "%s %s done\n", s.name, sc.name.c_str());
    }
    cross->score(queries[0], std::vector<std::string>(s.texts.begin(), s.texts.begin() + 4), batch);  // warm-up
    auto t0 = Clock::now();
    for (size_t q = 0; q < nq; ++q) cross->score(queries[q], s.texts, batch);
    const double sec = since(t0);
    js["cross_encoder"] = {{"ms_per_query", 1e3 * sec / static_cast<double>(nq)},
                           {"ms_per_candidate", 1e3 * sec / static_cast<double>(nq * K)},
                           {"parameters", cross->parameter_count()}};
    std::fprintf(stderr, "%s cross-encoder done\n", s.name);
    out[s.name] = js;
  }
  std::printf("%s\n", out.dump(2).c_str());
  return 0;
}
