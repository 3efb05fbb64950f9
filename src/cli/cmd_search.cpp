// `sieve search`: dense, BM25 or hybrid retrieval over an index; JSON lines, TSV or a TREC run.
#include <cmath>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/cli_common.h"
#include "core/log.h"
#include "eval/beir.h"
#include "sieve/error.h"
#include "sieve/index.h"
#include "sieve/model.h"
#include "sieve/pipeline.h"

namespace sieve::cli {
namespace {

std::vector<eval::Query> gather_queries(const std::vector<std::string>& args, const std::string& file) {
  std::vector<eval::Query> qs;
  if (!args.empty()) {
    SIEVE_THROW_IF_NOT(file.empty(), "give queries either as arguments or with --queries, not both");
    for (size_t i = 0; i < args.size(); ++i) qs.push_back({std::to_string(i + 1), args[i]});
  } else if (!file.empty() && file != "-") {
    qs = eval::read_queries(file);
  } else {
    // stdin is read as a queries file is: BEIR JSON lines, TSV or text, told apart by content.
    eval::QueriesLayout layout;
    qs = eval::read_queries(std::cin, "stdin", &layout);
    if (layout != eval::QueriesLayout::Text)
      log_info(std::string("reading the queries on stdin as ") +
               (layout == eval::QueriesLayout::Jsonl ? "BEIR JSON lines {\"_id\", \"text\"}" : "TSV (id<TAB>text)"));
  }
  SIEVE_THROW_IF_NOT(!qs.empty(), "no queries given (arguments, --queries FILE, or lines on stdin)");
  return qs;
}

// One JSON line per query: {"query_id", "query", "hits": [hit_json, ...]} (scores to 7 digits).
template <class HitT>
std::string hits_line(const Index& index, const eval::Query& q, const std::vector<HitT>& hits, bool text) {
  nlohmann::ordered_json line = {{"query_id", q.id}, {"query", q.text}, {"hits", nlohmann::ordered_json::array()}};
  HitJsonOptions ho;
  ho.text = text;
  ho.digits = 7;
  for (size_t r = 0; r < hits.size(); ++r) line["hits"].push_back(hit_json(index, hits[r], r + 1, ho));
  return line.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

}  // namespace

namespace {

struct SearchOpts {
    std::string index, model, queries, output = "jsonl", trec, mode, fusion, filter;
    std::vector<std::string> args;
    SearchParams p;
    DeviceFlags dev;
    size_t batch = 64;
    bool text = false;
    std::string verifier, gate_mode, cross;
    PipelineParams pipe;
    bool rerank = false;
};

// Two-stage search: stage 1, then the verifier over the top K; each result carries both scores.
void run_verified(const Index& index, const ResolvedVerifier& verifier, const SearchOpts& o,
                  const std::vector<eval::Query>& queries) {
  PipelineParams pp = o.pipe;
  pp.stage1 = o.p;
  pp.k = o.p.k;
  pp.rerank = o.rerank;
  if (o.output == "tsv" && o.trec.empty())
    std::printf("query_id\trank\tdoc_id\tstage1_score\tstage1_rank\tverifier_score\taccepted%s\n", o.text ? "\ttext" : "");
  size_t sent = 0, read = 0;
  double cross_seconds = 0;
  for (const auto& q : queries) {
    Stage2Timing st;
    auto hits = search_verified(index, verifier, q.text, pp, &st);
    sent += st.sent;
    cross_seconds += st.cross;
    read += st.scored;
    std::string out;
    if (!o.trec.empty()) {
      std::vector<eval::RunEntry> ranked;
      for (const auto& h : hits) ranked.push_back({h.hit.id, o.rerank ? h.verifier_score : h.hit.score});
      std::ostringstream s;
      eval::write_trec_run(s, q.id, ranked, o.trec);
      out = s.str();
    } else if (o.output == "tsv") {
      for (size_t r = 0; r < hits.size(); ++r) {
        out += q.id + "\t" + std::to_string(r + 1) + "\t" + hits[r].hit.id + "\t";
        append_float(out, static_cast<float>(hits[r].hit.score));
        out += "\t" + std::to_string(hits[r].stage1_rank) + "\t";
        append_float(out, hits[r].verifier_score);
        out += hits[r].accepted ? "\ttrue" : "\tfalse";
        if (o.text) {  // tabs and newlines inside the text would break the columns
          std::string t = index.document(hits[r].hit.doc).text;
          for (char& c : t)
            if (c == '\t' || c == '\n' || c == '\r') c = ' ';
          out += "\t" + t;
        }
        out += "\n";
      }
    } else {
      out = hits_line(index, q, hits, o.text);
    }
    std::fwrite(out.data(), 1, out.size(), stdout);
  }
  if (verifier.cascade()) {
    char line[200];
    std::snprintf(line, sizeof line, "cascade: sent %zu of %zu candidates (%.1f%%) to the cross-encoder, %.1f ms a query",
                  sent, read, read ? 100.0 * sent / read : 0.0, queries.empty() ? 0.0 : 1000 * cross_seconds / queries.size());
    log_info(line);
  }
}

}  // namespace

void register_search(CLI::App& app) {
  using Opts = SearchOpts;
  auto o = std::make_shared<Opts>();
  auto* cmd = app.add_subcommand("search", "Search an index: dense (ANN), bm25, or hybrid (fused) retrieval");
  cmd->add_option("queries", o->args, "Query texts (default: --queries FILE, else the queries on stdin, read as --queries reads a file)");
  cmd->add_option("--index", o->index, "Index directory")->required();
  cmd->add_option("-q,--queries", o->queries, "Query file: BEIR queries.jsonl, TSV (id, text) or text lines (.jsonl/.tsv/.txt by name; '-' or another name: by content)");
  cmd->add_option("--mode", o->mode,
                  "dense, bm25 or hybrid (default: what the index's model folder recommends, else dense)")
      ->check(CLI::IsMember({"dense", "bm25", "hybrid"}));
  cmd->add_option("-k,--k", o->p.k, "Results per query")->capture_default_str()->check(kPositive);
  cmd->add_option("--fusion-depth,--depth", o->p.depth, "Hybrid: candidates taken from each list (0 = max(k, 100))")
      ->check(kNonNegative);
  cmd->add_option("--fusion", o->fusion, "Hybrid fusion: rrf, weighted (min-max) or zscore (default: the model's recommendation, else rrf)")
      ->check(CLI::IsMember({"rrf", "weighted", "zscore"}));
  cmd->add_option("--rrf-k", o->p.rrf_k, "RRF constant (default: the model's recommendation, else 60)")
      ->check(kNonNegative);
  cmd->add_option("--dense-weight", o->p.dense_weight,
                  "Weighted fusion: weight of the dense scores (default: the model's recommendation, else 0.5)")
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--weight-slope", o->p.weight_slope,
                  "Weighted/zscore fusion: per query, the dense weight moves by this times (top z-score of the "
                  "dense list - top z-score of the BM25 list), clamped to [0, 1] (default: the model's "
                  "recommendation, else 0: one weight for all)")
      ->check(CLI::Range(-10.0, 10.0));
  cmd->add_option("--filter", o->filter,
                  "Only documents whose metadata passes this filter (JSON: {\"year\": {\"$gte\": 2020}, "
                  "\"lang\": {\"$in\": [\"en\", \"de\"]}}; docs/filters.md), in every mode and stage");
  cmd->add_option("--ef", o->p.ef_search, "HNSW efSearch (0 = max(64, k))")->check(kNonNegative);
  cmd->add_option("--nprobe", o->p.nprobe, "IVF lists probed (0 = the index's default)")->check(kNonNegative);
  cmd->add_option("--output", o->output, "jsonl or tsv")
      ->check(CLI::IsMember({"jsonl", "tsv"}))
      ->capture_default_str();
  cmd->add_option("--trec", o->trec, "Write a TREC run to stdout, tagged RUN_NAME (qid Q0 docid rank score RUN_NAME)")
      ->type_name("RUN_NAME");
  cmd->add_flag("--text", o->text, "Include each hit's text (JSON lines: title and text; TSV with --verifier: a text column)");
  cmd->add_option("-m,--model", o->model, "Model directory (default: the one recorded in the index)");
  cmd->add_option("--verifier", o->verifier,
                  std::string("Stage 2: verify the top --candidates with this verifier (file, cosine, default, F0, F1, "
                              "F2; with --gate alone: the verifier.safetensors beside the index's model; with --rerank alone: F1, "
                              "the relevance reranker, never the identity gate)") + kVerifierNames);
  cmd->add_option("--candidates", o->pipe.candidates, "Stage 2: stage-1 hits the verifier reads (K)")
      ->capture_default_str()
      ->check(kPositive);
  cmd->add_flag("--rerank", o->rerank, "Stage 2: order results by verifier score (default: stage-1 order)");
  cmd->add_flag("--gate", o->pipe.gate, "Stage 2: drop candidates the verifier rejects (its calibrated threshold)");
  cmd->add_option("--gate-mode", o->gate_mode,
                  "Stage 2 (implies --gate): fast (the model's gate over the stored token states), accurate (a "
                  "cross-encoder over every candidate), cascade (the fast gate, and the cross-encoder for the "
                  "candidates within its calibrated band) or auto (cascade when the model has a calibrated "
                  "cross-encoder installed, else fast: what --gate alone does)")
      ->check(CLI::IsMember({"auto", "fast", "accurate", "cascade"}));
  cmd->add_option("--cross", o->cross, "Stage 2: the cross-encoder folder of --gate-mode accurate|cascade (default: "
                                       "MODEL_DIR/cross-encoder)");
  cmd->add_option("--threshold", o->pipe.threshold, "Stage 2: gate threshold (default: the verifier file's)");
  cmd->add_option("--batch,--batch-size", o->batch, "Queries encoded per batch")->capture_default_str()->check(kPositive);
  o->dev.add(cmd);
  on_run(cmd, [o, cmd] {
    o->p.filter = parse_filter_flag(o->filter);
    auto queries = gather_queries(o->args, o->queries);
    check_stage2_choice(o->verifier, o->gate_mode, o->cross);
    if (!o->gate_mode.empty()) o->pipe.gate = true;
    apply_search_flags(*cmd, recommended_search_for_index(o->index, o->model), o->mode, o->fusion, o->p);
    IndexOpenOptions oo;
    oo.model_dir = o->model;
    oo.encoder = o->dev.options();
    // Stage 2 reads the query's token states, so it needs the encoder whatever stage 1's mode.
    oo.load_encoder = o->p.mode != SearchMode::Bm25 || !o->verifier.empty() || o->pipe.gate || o->rerank;
    auto index = Index::open(o->index, oo);
    // The verifier made for the encoder that searches: beside the index's model (or --model).
    const std::string model = o->model.empty() ? index->stats().model_path : o->model;
    const bool chosen_here = o->verifier.empty() && o->gate_mode.empty() && (o->pipe.gate || o->rerank);
    if (!o->gate_mode.empty()) o->verifier = stage2_choice("", o->gate_mode, o->cross, model).gate;
    if (chosen_here) {
      SIEVE_THROW_IF_NOT(!o->pipe.gate || !default_verifier(model, "").empty(),
                         "--gate needs a calibrated verifier, and the model folder '"
                             << model << "' has no verifier.safetensors: give --verifier FILE");
      // Two jobs kept apart (stage2_choice): --gate takes the model's gate (auto: the cascade when
      // a calibrated cross-encoder is installed); --rerank alone orders by relevance with F1.
      const Stage2Choice choice = stage2_choice("", "", "", model);
      o->verifier = o->pipe.gate ? choice.gate : choice.rerank;
      if (!o->pipe.gate && !default_verifier(model, "").empty())
        log_info("--rerank without --verifier orders by F1 (MaxSim); the model's verifier is an identity gate "
                 "(--gate, or --verifier default to rerank by it)");
    }
    if (!o->verifier.empty()) {
      const ResolvedVerifier verifier = resolve_verifier(o->verifier, {model, index->stats().model_identity});
      if (chosen_here) log_info("stage 2 with the verifier " + verifier.name);
      if (o->pipe.gate)
        for (const auto& q : queries)
          if (const std::string note = gate_question_note(q.text); !note.empty()) {
            log_warn(note + " ('" + q.text + "')");
            break;
          }
      run_verified(*index, verifier, *o, queries);
      return;
    }
    if (o->output == "tsv" && o->trec.empty()) std::printf("query_id\trank\tdoc_id\tscore\n");
    for (size_t start = 0; start < queries.size(); start += o->batch) {
      size_t end = std::min(queries.size(), start + o->batch);
      std::vector<std::string> texts;
      for (size_t i = start; i < end; ++i) texts.push_back(queries[i].text);
      auto results = index->search_batch(texts, o->p);
      std::string out;
      for (size_t i = start; i < end; ++i) {
        const auto& hits = results[i - start].hits;
        const std::string& qid = queries[i].id;
        if (!o->trec.empty()) {
          std::vector<eval::RunEntry> ranked;
          for (const Hit& h : hits) ranked.push_back({h.id, h.score});
          std::ostringstream s;
          eval::write_trec_run(s, qid, ranked, o->trec);
          out += s.str();
        } else if (o->output == "tsv") {
          for (size_t r = 0; r < hits.size(); ++r) {
            out += qid + "\t" + std::to_string(r + 1) + "\t" + hits[r].id + "\t";
            append_float(out, static_cast<float>(hits[r].score));
            out += "\n";
          }
        } else {
          out += hits_line(*index, queries[i], hits, o->text);
        }
      }
      std::fwrite(out.data(), 1, out.size(), stdout);
    }
  });
}

}  // namespace sieve::cli
