// sieve cache: the semantic cache (sieve/cache.h, docs/cache.md) from the command line, for
// inspection and scripts: lookup, store, get, invalidate, info. JSON out, one object per call.
#include <cmath>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "cli/cli_common.h"
#include "index/document_json.h"
#include "sieve/cache.h"
#include "sieve/error.h"

namespace sieve::cli {
namespace {

struct CacheFlags {
  std::string dir, model, verifier = "default", scope;
  double threshold = std::nan("");
};

void add_cache_flags(CLI::App* cmd, CacheFlags& f) {
  cmd->add_option("--cache", f.dir, "The cache's folder (created by the first store)")->required();
  cmd->add_option("-m,--model", f.model, "Model directory or installed name (default: the cache's, else the default model)");
  cmd->add_option("--verifier", f.verifier, "The gate (default: the model's shipped one; cosine needs --threshold)")
      ->capture_default_str();
  cmd->add_option("--threshold", f.threshold, "Accept at this gate score (default: the gate's calibrated threshold)");
  cmd->add_option("--scope", f.scope, "The scope, a JSON object of strings: {\"model\": \"gpt-x\", \"tenant\": \"a\"}");
}

std::unique_ptr<SemanticCache> open_cache(const CacheFlags& f) {
  CacheOptions o;
  o.model_dir = f.model;
  o.verifier = f.verifier;
  o.threshold = f.threshold;
  return SemanticCache::open(f.dir, o);
}

// --scope: a malformed one is a usage error (exit 2) in the library's words.
CacheScope scope_flag(const std::string& text) {
  if (text.empty()) return {};
  try {
    return cache_scope_from_json(text);
  } catch (const Error& e) {
    throw UsageError(std::string("--scope: ") + e.what());
  }
}

}  // namespace

void register_cache(CLI::App& app) {
  auto* group = app.add_subcommand("cache", "A semantic cache whose hits pass the identity gate (docs/cache.md)");
  group->require_subcommand(1);
  {
    auto f = std::make_shared<CacheFlags>();
    auto prompt = std::make_shared<std::string>();
    auto* cmd = group->add_subcommand("lookup", "Look a prompt up: the hit's answer and scores, or the miss's best candidate");
    add_cache_flags(cmd, *f);
    cmd->add_option("prompt", *prompt, "The prompt")->required();
    on_run(cmd, [f, prompt] {
      const CacheScope scope = scope_flag(f->scope);
      std::printf("%s\n", cache_lookup_json(open_cache(*f)->lookup(*prompt, scope)).c_str());
    });
  }
  {
    auto f = std::make_shared<CacheFlags>();
    auto prompt = std::make_shared<std::string>(), answer = std::make_shared<std::string>();
    auto ttl = std::make_shared<double>(0);
    auto* cmd = group->add_subcommand("store", "Store an answer for a prompt (the same prompt in the same scope is replaced)");
    add_cache_flags(cmd, *f);
    cmd->add_option("prompt", *prompt, "The prompt")->required();
    cmd->add_option("answer", *answer, "The answer (any text)")->required();
    cmd->add_option("--ttl-s", *ttl, "Seconds until the entry expires (0: never)")->check(CLI::NonNegativeNumber);
    on_run(cmd, [f, prompt, answer, ttl] {
      const CacheScope scope = scope_flag(f->scope);
      std::printf("%s\n", nlohmann::json{{"id", open_cache(*f)->store(*prompt, *answer, scope, *ttl)}}.dump().c_str());
    });
  }
  {
    auto f = std::make_shared<CacheFlags>();
    auto id = std::make_shared<std::string>();
    auto* cmd = group->add_subcommand("get", "Print one live entry (exit 1 when there is none)");
    add_cache_flags(cmd, *f);
    cmd->add_option("id", *id, "The entry's id")->required();
    on_run(cmd, [f, id] {
      CacheEntry e;
      if (!open_cache(*f)->get(*id, &e)) throw Error("no cache entry '" + *id + "'");
      std::printf("%s\n", cache_entry_json(e).c_str());
    });
  }
  {
    auto f = std::make_shared<CacheFlags>();
    auto ids = std::make_shared<std::vector<std::string>>();
    auto all = std::make_shared<bool>(false);
    auto* cmd = group->add_subcommand("invalidate", "Remove entries by id, by --scope (entries whose scope has those values) or --all");
    add_cache_flags(cmd, *f);
    cmd->add_option("ids", *ids, "Entry ids");
    cmd->add_flag("--all", *all, "Remove every entry");
    on_run(cmd, [f, ids, all] {
      const int ways = (!ids->empty()) + (!f->scope.empty()) + (*all ? 1 : 0);
      if (ways != 1) throw UsageError("give ids, --scope or --all (one of them)");
      auto c = open_cache(*f);
      const size_t n = !ids->empty() ? c->invalidate(*ids) : c->invalidate_scope(*all ? CacheScope{} : scope_flag(f->scope));
      std::printf("%s\n", nlohmann::json{{"deleted", n}}.dump().c_str());
    });
  }
  {
    auto f = std::make_shared<CacheFlags>();
    auto* cmd = group->add_subcommand("compact", "Rewrite the cache without its expired, replaced and invalidated entries");
    add_cache_flags(cmd, *f);
    on_run(cmd, [f] {
      std::printf("%s\n", index::compact_report_json(open_cache(*f)->compact()).dump().c_str());
    });
  }
  {
    auto f = std::make_shared<CacheFlags>();
    auto* cmd = group->add_subcommand("info", "Print the live entries, the gate and its threshold");
    add_cache_flags(cmd, *f);
    on_run(cmd, [f] {
      auto c = open_cache(*f);
      const nlohmann::json j = {{"entries", c->size()}, {"verifier", c->options().verifier}, {"threshold", c->threshold()},
                                {"scope_fields", c->options().scope_fields}};
      std::printf("%s\n", j.dump().c_str());
    });
  }
}

}  // namespace sieve::cli
