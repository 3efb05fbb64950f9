// `sieve index build|add|delete|info|verify`: create, extend, delete from and inspect an index directory.
#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli/cli_common.h"
#include "index/document_json.h"
#include "sieve/model.h"
#include "sieve/index.h"

namespace sieve::cli {
namespace {

struct BuildFlags {
  std::string corpus;
  std::string format = "auto";
  IndexBuildOptions opt;
  DeviceFlags dev;
  std::string pooling;
  size_t max_length = 0;
  bool no_tokens = false;
  bool no_overlap = false;

  void add(CLI::App* cmd, bool build) {
    if (!build)
      cmd->add_flag("--upsert", opt.upsert,
                    "Replace the documents of ids the index holds (key, BM25 terms, token states, text, metadata, "
                    "in the add's one commit) instead of refusing them");
    cmd->add_option("-c,--corpus", corpus, "Corpus: BEIR corpus.jsonl, TSV (id, text[, title]) or text")
        ->required();
    cmd->add_option("--format", format, "Corpus format (auto = by extension)")
        ->check(CLI::IsMember({"auto", "jsonl", "tsv", "text"}))
        ->capture_default_str();
    if (build) {
      cmd->add_option("--vectors", opt.vector_factory,
                      "FAISS factory string for the keys (Flat, HNSW32, IVF256,Flat, ...); auto = Flat "
                      "below --hnsw-threshold documents, else HNSW32")
          ->capture_default_str();
      cmd->add_option("--hnsw-threshold", opt.auto_hnsw_threshold, "Corpus size from which auto uses HNSW32")
          ->capture_default_str();
      cmd->add_option("--ef-construction", opt.hnsw_ef_construction, "HNSW build breadth")->capture_default_str();
      cmd->add_option("--codec", opt.token_codec,
                      "Token-state codec: fp32, fp16, sq8 (384 B/token at 384 dims), sq4, pq (dim/4 B), pq64, pq32, res1 / res2 "
                      "(ColBERTv2-style residuals: 2 + dim/8 or dim/4 B), RES<k>x<bits>, or a FAISS codec string (SQ6, PQ48)")
          ->capture_default_str();
      cmd->add_option("--codec-train", opt.codec_train_tokens, "Token states sampled to train the codec")
          ->capture_default_str();
      cmd->add_flag("--no-tokens", no_tokens, "Do not store token states (stage 2 verification then cannot run)");
      cmd->add_option("--pooling", pooling, "Override the model's pooling: cls, mean or last")
          ->check(CLI::IsMember({"cls", "mean", "last"}));
      cmd->add_option("--max-length", max_length, "Token cap incl. specials (default: the model's)");
      cmd->add_flag("--restart", opt.restart, "Discard an interrupted build instead of resuming it");
      cmd->add_flag("--force", opt.force, "Replace an existing index at --out");
    }
    cmd->add_option("--chunk", opt.chunk_docs, "Documents encoded per commit")
        ->capture_default_str()
        ->check(kPositive);
    cmd->add_flag("--no-overlap", no_overlap,
                  "Encode and store in turn instead of storing each chunk while the next is encoded "
                  "(slower; to measure what the overlap saves)");
    cmd->add_option("--batch-size", opt.batch_size, "Texts per forward pass")
        ->capture_default_str()
        ->check(kPositive);
    dev.add(cmd);
  }
  void resolve() {
    opt.format = format == "jsonl"  ? CorpusFormat::Jsonl
                 : format == "tsv"  ? CorpusFormat::Tsv
                 : format == "text" ? CorpusFormat::Text
                                    : CorpusFormat::Auto;
    opt.store_tokens = !no_tokens;
    opt.overlap = !no_overlap;
  }
  EncoderOptions encoder_options() const {
    EncoderOptions eo = dev.options();
    eo.max_length = max_length;
    if (!pooling.empty()) eo.pooling = pooling_from_name(pooling);
    return eo;
  }
};

void print_report(const BuildReport& r) {
  nlohmann::json j = {{"documents", r.documents},   {"added", r.added}, {"replaced", r.replaced},
                      {"resumed_from", r.resumed_from}, {"truncated", r.truncated},
                      {"encode_seconds", r.encode_seconds}, {"validate_seconds", r.validate_seconds},
                      {"store_seconds", r.store_seconds}, {"lexical_seconds", r.lexical_seconds},
                      {"vectors_seconds", r.vectors_seconds}, {"total_seconds", r.total_seconds},
                      {"docs_per_second", r.total_seconds > 0 ? r.added / r.total_seconds : 0.0},
                      {"note", r.note}};
  std::printf("%s\n", j.dump().c_str());
}

}  // namespace

void register_index(CLI::App& app) {
  auto* group = app.add_subcommand("index", "Build, extend and inspect a search index (stage 1)");
  group->require_subcommand(1);

  {
    struct Opts {
      std::string model, out;
      size_t shards = 1;
      BuildFlags f;
    };
    auto o = std::make_shared<Opts>();
    auto* cmd = group->add_subcommand(
        "build", "Encode a corpus into a new index: vectors (FAISS), BM25 (Xapian), token store, corpus store");
    cmd->add_option("-m,--model", o->model, std::string("Model directory or installed name (Hugging Face layout; default: ") + kDefaultModel + ")");
    cmd->add_option("-o,--out", o->out, "Index directory to create")->required();
    cmd->add_option("--shards", o->shards,
                    "Write a shard set of this many shards (contiguous parts of the corpus, one index each, "
                    "searched as one: the layout `python3 -m sieve.ray build` writes); 1 = one index")
        ->capture_default_str()
        ->check(kPositive);
    o->f.add(cmd, true);
    on_run(cmd, [o] {
      o->f.resolve();
      const std::string model = resolve_model_dir(o->model);
      print_report(o->shards > 1 ? build_shard_set(model, o->f.corpus, o->out, o->shards, o->f.opt, o->f.encoder_options())
                                 : build_index(model, o->f.corpus, o->out, o->f.opt, o->f.encoder_options()));
    });
  }
  {
    struct Opts {
      std::string index, model;
      BuildFlags f;
    };
    auto o = std::make_shared<Opts>();
    auto* cmd = group->add_subcommand("add", "Append the documents of a corpus file to an existing index");
    cmd->add_option("--index", o->index, "Index directory")->required();
    cmd->add_option("-m,--model", o->model, "Model directory (default: the one recorded in the index)");
    o->f.add(cmd, false);
    on_run(cmd, [o] {
      o->f.resolve();
      print_report(add_to_index(o->index, o->f.corpus, o->f.opt, o->f.dev.options(), o->model));
    });
  }
  {
    struct Opts {
      std::string index, ids, filter;
      bool missing_ok = false;
    };
    auto o = std::make_shared<Opts>();
    auto* cmd = group->add_subcommand(
        "delete", "Delete documents by id or by metadata filter, in one durable commit (searches stop seeing them at "
                  "once; the disk returns at `sieve index compact`)");
    cmd->add_option("--index", o->index, "Index directory")->required();
    auto* ids = cmd->add_option("--ids", o->ids, "File of ids to delete, one per line ('-': stdin)");
    auto* filter = cmd->add_option("--filter", o->filter, "Delete every document whose metadata passes this filter (JSON)");
    ids->excludes(filter);
    cmd->add_flag("--missing-ok", o->missing_ok,
                  "With --ids: ids the index does not hold are reported and the rest deleted (default: refuse the "
                  "batch, nothing deleted)");
    on_run(cmd, [o] {
      if (o->ids.empty() && o->filter.empty()) throw UsageError("give --ids FILE or --filter JSON");
      DeleteReport r;
      if (!o->filter.empty()) {
        const Filter f = parse_filter_flag(o->filter);
        if (f.empty()) throw UsageError("--filter: an empty filter matches every document (remove the index folder to delete it all)");
        r = delete_matching(o->index, f);
      } else {
        TextSource src;
        src.input_file = o->ids;
        std::vector<std::string> list;
        for (std::string line : src.read()) {
          if (!line.empty() && line.back() == '\r') line.pop_back();
          if (!line.empty()) list.push_back(line);
        }
        if (list.empty()) throw UsageError("--ids: no ids in '" + o->ids + "'");
        r = delete_documents(o->index, list, o->missing_ok);
      }
      nlohmann::json j = {{"deleted", r.deleted}, {"missing", r.missing}, {"documents", r.documents}};
      std::printf("%s\n", j.dump().c_str());
    });
  }
  {
    auto index = std::make_shared<std::string>();
    auto* cmd = group->add_subcommand(
        "compact", "Rewrite an index without its deleted, replaced and expired documents (disk returns; searches "
                   "and writes go on meanwhile; the folders are exchanged in one step at the end)");
    cmd->add_option("--index", *index, "Index directory")->required();
    on_run(cmd, [index] {
      std::printf("%s\n", index::compact_report_json(compact_index(*index)).dump().c_str());
    });
  }
  {
    struct Opts {
      std::string index;
      bool verify = false;
    };
    auto o = std::make_shared<Opts>();
    auto* info = group->add_subcommand("info", "Print what an index holds (JSON)");
    info->add_option("--index", o->index, "Index directory")->required();
    auto* verify = group->add_subcommand("verify", "Check every checksum of an index (reads all of it)");
    verify->add_option("--index", o->index, "Index directory")->required();
    auto body = [o](bool full) {
      IndexOpenOptions oo;
      oo.load_encoder = false;
      oo.verify = full;
      auto idx = Index::open(o->index, oo);
      const IndexStats& s = idx->stats();
      nlohmann::json files = nlohmann::json::object();
      for (const auto& [f, b] : s.file_bytes) files[f] = b;
      nlohmann::json j = {{"documents", s.documents},
                          {"dim", s.dim},
                          {"shards", s.shards},
                          {"tokens", s.tokens},
                          {"vectors", s.vector_factory},
                          {"codec", s.token_codec},
                          {"code_bytes_per_token", s.token_code_bytes},
                          {"model_identity", s.model_identity},
                          {"model_path", s.model_path},
                          {"key_grid", s.key_grid},
                          {"deleted", s.deleted},
                          {"metadata", s.has_metadata},
                          {"bytes_on_disk", s.bytes_on_disk},
                          {"files", files}};
      if (full) j["verified"] = true;
      std::printf("%s\n", j.dump(2).c_str());
    };
    on_run(info, [body] { body(false); });
    on_run(verify, [body] { body(true); });
  }
}

}  // namespace sieve::cli
