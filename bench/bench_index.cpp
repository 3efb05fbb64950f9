// End-to-end benchmark of stage 1 (prints one JSON object; see docs/benchmarks.md):
//  - build throughput against pure encoding throughput on a corpus,
//  - token codecs: bytes per token and per document, decode time per document, max cosine error,
//    and with --qrels what each costs stage 2: the F1 (MaxSim) score error over the top-100
//    candidates of every judged query, and nDCG@10 after reranking them by F1 on decoded states,
//  - search latency (p50/p99) and QPS for dense, bm25 and hybrid on the built index,
//  - a synthetic corpus of N unit vectors: Flat against HNSW32 (build time, latency, recall@10).
// Usage: bench_index --model DIR --corpus corpus.jsonl --queries queries.jsonl --work DIR
//                    [--qrels qrels.tsv] [--synthetic 100000] [--threads 2]
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>
#include <unordered_map>

#include "sieve/verify.h"

#include "bench_util.h"
#include "eval/beir.h"
#include "eval/metrics.h"
#include "index/corpus_reader.h"
#include "index/token_codec.h"
#include "index/token_store.h"
#include "index/vector_index.h"
#include "sieve/encoder.h"
#include "sieve/index.h"

using namespace sieve;
using sieve::bench::Clock;
using sieve::bench::percentile;
using sieve::bench::since;
namespace fs = std::filesystem;

using sieve::bench::latency_json;

namespace {

// Decodes one document's codes into `t` (t.length rows) as the token store serves them: unit rows.
void c_decode(const index::TokenCodec& codec, const std::vector<uint8_t>& codes, TokenStates& t) {
  const size_t d = t.values.size() / std::max<size_t>(1, t.length);
  codec.decode(t.length, codes.data(), t.values.data());
  index::normalize_rows(t.values.data(), t.length, d);
}

}  // namespace

int main(int argc, char** argv) {
  ensure_fast_blas(argv);
  tune_allocator();
  CLI::App app{"sieve stage-1 benchmark"};
  std::string model, corpus, queries_path, work, qrels_path;
  size_t synthetic = 100000, chunk = 512, max_queries = 300;
  int threads = 0, ef_construction = IndexBuildOptions{}.hnsw_ef_construction;
  std::string engine = "auto", precision = "fp32", vectors = "auto";
  std::vector<std::string> codec_names = {"fp32", "fp16", "sq8", "sq4", "pq", "pq64", "pq32", "res2", "res1"};
  app.add_option("--model", model, "a model name or folder")->required();
  app.add_option("--corpus", corpus)->required();
  app.add_option("--queries", queries_path)->required();
  app.add_option("--qrels", qrels_path, "judgements: measure each codec's F1 error and rerank nDCG@10");
  app.add_option("--work", work, "scratch folder for the index")->required();
  app.add_option("--synthetic", synthetic, "vectors in the synthetic ANN corpus (0 = skip)");
  app.add_option("--max-queries", max_queries);
  app.add_option("--threads", threads);
  app.add_option("--engine", engine, "the encoder's pass: auto, torch or native")->capture_default_str();
  app.add_option("--precision", precision, "fp32, int8 or bf16")->capture_default_str();
  app.add_option("--vectors", vectors, "the build's vector index factory (auto, Flat, HNSW32, ...)")->capture_default_str();
  app.add_option("--ef-construction", ef_construction, "HNSW efConstruction of the build")->capture_default_str();
  app.add_option("--codecs", codec_names, "token codecs to measure (none: skip)")->delimiter(',')->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  if (codec_names.size() == 1 && codec_names[0] == "none") codec_names.clear();
  set_compute_threads(threads);
  model = resolve_model_dir(model);
  nlohmann::json out;

  // 1. Pure encoding, chunked exactly as the build chunks it.
  EncoderOptions eo;
  eo.threads = threads;
  eo.engine = engine_from_name(engine);
  eo.precision = precision_from_name(precision);
  auto enc = Encoder::load(model, eo);
  std::vector<Document> docs;
  {
    index::CorpusReader r(corpus);
    Document d;
    while (r.next(d)) docs.push_back(d);
  }
  std::vector<TokenStates> tokens;
  auto t0 = Clock::now();
  for (size_t s = 0; s < docs.size(); s += chunk) {
    std::vector<std::string> texts;
    for (size_t i = s; i < std::min(docs.size(), s + chunk); ++i) texts.push_back(encoder_text(docs[i]));
    EncodeCall call;
    call.token_states = true;
    Embeddings e = enc->encode(texts, call);
    for (auto& t : e.tokens) tokens.push_back(std::move(t));
    std::fprintf(stderr, "\rencoding %zu/%zu", std::min(docs.size(), s + chunk), docs.size());
  }
  double encode_s = since(t0);
  uint64_t n_tokens = 0;
  for (auto& t : tokens) n_tokens += t.length;
  std::fprintf(stderr, "\n");

  // 2. The build of the same corpus (default options: Flat/HNSW auto, SQ8 token store).
  std::string ix = work + "/bench_index";
  fs::remove_all(ix);
  fs::remove_all(ix + ".partial");
  IndexBuildOptions bo;
  bo.chunk_docs = chunk;
  bo.vector_factory = vectors;
  bo.hnsw_ef_construction = ef_construction;
  BuildReport rep = build_index(model, corpus, ix, bo, eo);
  out["corpus"] = {{"documents", docs.size()}, {"tokens", n_tokens}, {"dim", enc->dim()},
                   {"max_length", enc->max_length()}};
  out["build"] = {{"encode_only_seconds", encode_s},
                  {"encode_only_docs_per_second", docs.size() / encode_s},
                  {"build_seconds", rep.total_seconds},
                  {"build_docs_per_second", docs.size() / rep.total_seconds},
                  {"encoder_seconds_inside_build", rep.encode_seconds},
                  {"vectors_seconds_inside_build", rep.vectors_seconds},
                  {"lexical_seconds_inside_build", rep.lexical_seconds},
                  {"store_seconds_inside_build", rep.store_seconds},
                  {"vector_index", vectors},
                  {"ef_construction", ef_construction},
                  {"engine", engine},
                  {"precision", precision},
                  {"overhead_vs_encode_only", rep.total_seconds / encode_s - 1.0}};
  std::fprintf(stderr, "build: %s\n", out["build"].dump().c_str());

  // 3. Codecs on the real token states.
  const size_t d = enc->dim();
  std::vector<float> sample;
  {
    size_t stride = std::max<uint64_t>(1, n_tokens / 65536), row = 0;
    for (auto& t : tokens) {
      index::normalize_rows(t.values.data(), t.length, d);
      for (size_t r = 0; r < t.length; ++r, ++row)
        if (row % stride == 0) sample.insert(sample.end(), t.values.begin() + r * d, t.values.begin() + (r + 1) * d);
    }
  }
  // Stage 2's view: every judged query's top 100 of stage 1 (the model's default search), with the
  // query's token states, to rerank by F1 on each codec's decoded states.
  struct Judged {
    std::string id;
    TokenStates states;
    std::vector<size_t> candidates;  // positions in docs
  };
  std::vector<Judged> judged;
  eval::Qrels qrels;
  auto f1 = Verifier::load("F1");
  if (!qrels_path.empty()) {
    qrels = eval::read_qrels(qrels_path);
    std::unordered_map<std::string, size_t> pos;
    for (size_t i = 0; i < docs.size(); ++i) pos[docs[i].id] = i;
    IndexOpenOptions oo;
    oo.encoder = eo;
    auto idx = Index::open(ix, oo);
    SearchParams p;
    recommended_search_for_index(ix).apply(p);
    p.k = 100;
    std::vector<std::string> texts;
    for (const auto& q : eval::read_queries(queries_path))
      if (qrels.count(q.id)) {
        judged.push_back({q.id, {}, {}});
        texts.push_back(q.text);
        for (const Hit& h : idx->search(q.text, p).hits) judged.back().candidates.push_back(pos.at(h.id));
      }
    EncodeCall call;
    call.token_states = true;
    Embeddings e = enc->encode(texts, call);
    for (size_t i = 0; i < judged.size(); ++i) {
      judged[i].states = std::move(e.tokens[i]);
      index::normalize_rows(judged[i].states.values.data(), judged[i].states.length, d);
    }
    out["stage2_codec_queries"] = judged.size();
    out["stage2_codec_stage1"] = search_mode_name(p.mode);
  }
  // F1 of every judged query against its candidates, on the exact states or on decoded ones.
  auto rerank = [&](const std::function<const TokenStates&(size_t)>& states_of, std::vector<std::vector<float>>& scores) {
    eval::Run run;
    scores.assign(judged.size(), {});
    for (size_t i = 0; i < judged.size(); ++i) {
      std::vector<const TokenStates*> cands;
      for (size_t c : judged[i].candidates) cands.push_back(&states_of(c));
      scores[i] = f1->score(judged[i].states, cands);
      auto& entries = run[judged[i].id];
      for (size_t j = 0; j < cands.size(); ++j) entries.push_back({docs[judged[i].candidates[j]].id, scores[i][j]});
      std::sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) { return a.score > b.score; });
    }
    return eval::evaluate_run(run, qrels, {10}).mean.at("ndcg@10");
  };
  std::vector<std::vector<float>> exact_f1;
  if (!judged.empty()) {
    out["stage2_exact_f1_rerank_ndcg@10"] = rerank([&](size_t c) -> const TokenStates& { return tokens[c]; }, exact_f1);
  }
  nlohmann::json codecs = nlohmann::json::array();
  for (const std::string& name : codec_names) {
    auto c = index::TokenCodec::create(index::TokenCodec::factory_for(name, d), d);
    auto tt = Clock::now();
    c->train(sample.size() / d, sample.data());
    double train_s = since(tt);
    std::vector<std::vector<uint8_t>> codes(tokens.size());
    tt = Clock::now();
    for (size_t i = 0; i < tokens.size(); ++i) {
      codes[i].resize(tokens[i].length * c->code_size());
      c->encode(tokens[i].length, tokens[i].values.data(), codes[i].data());
    }
    double encode_codes_s = since(tt);
    std::vector<float> buf;
    double max_err = 0;
    tt = Clock::now();
    for (size_t i = 0; i < tokens.size(); ++i) {
      buf.resize(tokens[i].length * d);
      c->decode(tokens[i].length, codes[i].data(), buf.data());
      index::normalize_rows(buf.data(), tokens[i].length, d);
    }
    double decode_s = since(tt);
    // Error of cos(q, c) for query tokens q taken from other documents, on a spread of documents.
    for (size_t i = 0; i < tokens.size(); i += 97) {
      buf.resize(tokens[i].length * d);
      c->decode(tokens[i].length, codes[i].data(), buf.data());
      index::normalize_rows(buf.data(), tokens[i].length, d);
      const TokenStates& q = tokens[(i * 7 + 3) % tokens.size()];
      for (size_t a = 0; a < q.length; ++a)
        for (size_t b = 0; b < tokens[i].length; ++b) {
          double x = 0, y = 0;
          for (size_t h = 0; h < d; ++h) {
            x += double(q.values[a * d + h]) * tokens[i].values[b * d + h];
            y += double(q.values[a * d + h]) * buf[b * d + h];
          }
          max_err = std::max(max_err, std::abs(x - y));
        }
    }
    nlohmann::json stage2;
    if (!judged.empty()) {
      std::unordered_map<size_t, TokenStates> decoded;  // the candidates' decoded states
      for (const auto& q : judged)
        for (size_t cand : q.candidates)
          if (!decoded.count(cand)) {
            TokenStates t;
            t.length = tokens[cand].length;
            t.values.resize(t.length * d);
            c_decode(*c, codes[cand], t);
            decoded.emplace(cand, std::move(t));
          }
      std::vector<std::vector<float>> got;
      const double ndcg = rerank([&](size_t c) -> const TokenStates& { return decoded.at(c); }, got);
      double sum = 0, worst = 0;
      size_t n = 0;
      for (size_t i = 0; i < got.size(); ++i)
        for (size_t j = 0; j < got[i].size(); ++j, ++n) {
          const double e = std::abs(double(got[i][j]) - exact_f1[i][j]);
          sum += e;
          worst = std::max(worst, e);
        }
      stage2 = {{"f1_mean_abs_error", n ? sum / n : 0.0}, {"f1_max_abs_error", worst}, {"f1_rerank_ndcg@10", ndcg}};
    }
    codecs.push_back({{"codec", name},
                      {"stage2", stage2},
                      {"bytes_per_token", c->code_size()},
                      {"bytes_per_document", (double(n_tokens) * c->code_size() + 16.0 * tokens.size()) / tokens.size()},
                      {"train_seconds", train_s},
                      {"encode_us_per_document", encode_codes_s / tokens.size() * 1e6},
                      {"decode_us_per_document", decode_s / tokens.size() * 1e6},
                      {"max_abs_cosine_error", max_err}});
    std::fprintf(stderr, "codec %s done\n", name.c_str());
  }
  out["codecs"] = codecs;
  tokens.clear();
  tokens.shrink_to_fit();

  // 4. Search latency on the built index.
  {
    IndexOpenOptions oo;
    oo.encoder = eo;
    auto idx = Index::open(ix, oo);
    auto queries = eval::read_queries(queries_path);
    if (queries.size() > max_queries) queries.resize(max_queries);
    nlohmann::json search;
    for (auto [mode, name] : {std::pair{SearchMode::Dense, "dense"}, {SearchMode::Bm25, "bm25"},
                              {SearchMode::Hybrid, "hybrid"}}) {
      SearchParams p;
      p.mode = mode;
      p.k = 10;
      std::vector<double> lat;
      for (const auto& q : queries) {
        auto tq = Clock::now();
        idx->search(q.text, p);
        lat.push_back(since(tq));
      }
      nlohmann::json j = latency_json(lat);
      std::vector<std::string> texts;
      for (const auto& q : queries) texts.push_back(q.text);
      auto tb = Clock::now();
      for (size_t s = 0; s < texts.size(); s += 64)
        idx->search_batch(std::vector<std::string>(texts.begin() + s, texts.begin() + std::min(texts.size(), s + 64)), p);
      j["qps_batched_64"] = texts.size() / since(tb);
      search[name] = j;
    }
    // Stage 2's access path: decode one candidate's token states.
    std::vector<double> dec;
    for (uint32_t i = 0; i < idx->size(); i += 7) {
      auto td = Clock::now();
      idx->tokens(i);
      dec.push_back(since(td));
    }
    search["token_decode_one_document"] = {{"p50_us", percentile(dec, 50) * 1e6}, {"p99_us", percentile(dec, 99) * 1e6}};
    search["queries"] = queries.size();
    out["search"] = search;
    nlohmann::json files;
    for (auto& [f, b] : idx->stats().file_bytes) files[f] = b;
    out["index_bytes"] = files;
  }

  // 5. Synthetic vectors: Flat vs HNSW32.
  if (synthetic > 0) {
    const size_t sd = d, nq = 1000;
    std::mt19937 rng(1);
    std::normal_distribution<float> g;
    const size_t clusters = 1000;
    std::vector<float> centres(clusters * sd);
    for (auto& v : centres) v = g(rng);
    index::normalize_rows(centres.data(), clusters, sd);
    auto draw = [&](size_t n) {
      std::vector<float> x(n * sd);
      for (size_t i = 0; i < n; ++i) {
        size_t c = rng() % clusters;
        for (size_t h = 0; h < sd; ++h) x[i * sd + h] = centres[c * sd + h] + 0.08f * g(rng);
      }
      index::normalize_rows(x.data(), n, sd);
      return x;
    };
    auto x = draw(synthetic), q = draw(nq);
    nlohmann::json syn = {{"vectors", synthetic}, {"dim", sd}};
    std::vector<int64_t> truth(nq * 10);
    for (const char* factory : {"Flat", "HNSW32"}) {
      index::FaissVectorIndex vi(factory, sd, IndexBuildOptions{}.hnsw_ef_construction);
      auto tb = Clock::now();
      vi.add(synthetic, x.data());
      double build_s = since(tb);
      std::vector<int64_t> labels(10);
      std::vector<float> scores(10);
      std::vector<double> lat;
      std::vector<int64_t> all(nq * 10);
      index::VectorSearchParams p;
      for (size_t i = 0; i < nq; ++i) {
        auto tq = Clock::now();
        vi.search(1, q.data() + i * sd, p, labels.data(), scores.data());
        lat.push_back(since(tq));
        std::copy(labels.begin(), labels.end(), all.begin() + i * 10);
      }
      if (std::string(factory) == "Flat") truth = all;
      size_t found = 0;
      for (size_t i = 0; i < nq; ++i)
        for (size_t j = 0; j < 10; ++j)
          found += std::count(truth.begin() + i * 10, truth.begin() + i * 10 + 10, all[i * 10 + j]);
      nlohmann::json j = latency_json(lat);
      j["build_seconds"] = build_s;
      j["recall_at_10_vs_flat"] = double(found) / (nq * 10);
      std::vector<float> sb(nq * 10);
      auto tb2 = Clock::now();
      vi.search(nq, q.data(), p, all.data(), sb.data());
      j["qps_batched"] = nq / since(tb2);
      syn[factory] = j;
      std::fprintf(stderr, "synthetic %s done\n", factory);
    }
    out["synthetic_ann"] = syn;
  }
  std::printf("%s\n", out.dump(2).c_str());
  return 0;
}
