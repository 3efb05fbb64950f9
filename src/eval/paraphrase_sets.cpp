#include "eval/paraphrase_sets.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <set>
#include <sstream>
#include <unordered_map>

#include "core/checksum.h"
#include "core/file_util.h"
#include "sieve/error.h"

namespace sieve::eval {
namespace {

// Case- and space-insensitive form of a sentence: the identity used to group pairs.
std::string normalise(const std::string& s) {
  std::string out;
  bool space = false;
  for (unsigned char c : s) {
    if (std::isspace(c)) {
      space = !out.empty();
      continue;
    }
    if (space) out += ' ';
    space = false;
    out += static_cast<char>(std::tolower(c));
  }
  return out;
}

// Union-find over normalised sentences.
class Components {
 public:
  size_t id(const std::string& sentence) {
    auto [it, fresh] = ids_.emplace(normalise(sentence), parent_.size());
    if (fresh) {
      parent_.push_back(parent_.size());
      keys_.push_back(it->first);
    }
    return it->second;
  }
  void join(const std::string& a, const std::string& b) {
    size_t x = find(id(a)), y = find(id(b));
    if (x != y) parent_[std::max(x, y)] = std::min(x, y);
  }
  // The smallest normalised sentence of the component: independent of insertion order.
  const std::string& key(const std::string& sentence) {
    if (smallest_.empty()) {
      smallest_.assign(parent_.size(), static_cast<size_t>(-1));
      for (size_t i = 0; i < parent_.size(); ++i) {
        size_t r = find(i);
        if (smallest_[r] == static_cast<size_t>(-1) || keys_[i] < keys_[smallest_[r]]) smallest_[r] = i;
      }
    }
    return keys_[smallest_[find(id(sentence))]];
  }

 private:
  size_t find(size_t x) {
    while (parent_[x] != x) x = parent_[x] = parent_[parent_[x]];
    return x;
  }
  std::unordered_map<std::string, size_t> ids_;
  std::vector<size_t> parent_;
  std::vector<std::string> keys_;
  std::vector<size_t> smallest_;
};

std::string clean_field(std::string s) {
  for (char& c : s)
    if (c == '\t' || c == '\n' || c == '\r') c = ' ';
  return s;
}

int column(const std::vector<std::string>& header, const std::string& name, const std::string& path) {
  for (size_t i = 0; i < header.size(); ++i)
    if (header[i] == name) return static_cast<int>(i);
  SIEVE_THROW(path << ": no '" << name << "' column in the header");
}

// A source pair before the split; `set` names the set it belongs to.
struct Pending {
  std::string set;
  LabelledPair pair;
};

struct Builder {
  explicit Builder(const ParaphraseSetOptions& o) : opt(o) {}
  const ParaphraseSetOptions& opt;
  std::vector<Pending> pending;
  nlohmann::json missing = nlohmann::json::array();
  nlohmann::json read = nlohmann::json::object();

  // Calls fn(row, column lookup) for every row of a shared file, or records it as missing.
  template <class Fn>
  void each_row(const std::string& rel, Fn fn) {
    const std::string path = path_join(opt.shared_data, rel);
    if (!is_file(path)) {
      missing.push_back(rel);
      return;
    }
    auto parsed = read_quoted_tsv(path);  // (not a structured binding: C++17 lambdas cannot capture one)
    const auto& header = std::get<0>(parsed);
    const auto& rows = std::get<1>(parsed);
    auto col = [&](const std::string& n) { return column(header, n, path); };
    size_t line = 1;
    for (const auto& r : rows) {
      ++line;
      SIEVE_THROW_IF_NOT(r.size() >= header.size(),
                         path << ": row " << line << " has " << r.size() << " field(s), the header " << header.size());
      fn(r, col);
    }
    read[rel] = rows.size();
  }

  void add(const std::string& set, const std::string& s1, const std::string& s2, const std::string& category,
           int label) {
    if (normalise(s1).empty() || normalise(s2).empty()) return;
    pending.push_back({set, {clean_field(s1), clean_field(s2), category, label}});
  }

  void labelled(const std::string& rel, const std::string& set) {
    each_row(rel, [&](const std::vector<std::string>& r, auto col) {
      const std::string& label = r[col("label")];
      SIEVE_THROW_IF_NOT(label == "0" || label == "1", rel << ": label '" << label << "' is neither 0 nor 1");
      add(set, r[col("sentence1")], r[col("sentence2")], set + (label == "1" ? "_paraphrase" : "_nonparaphrase"),
          label == "1" ? 1 : 0);
    });
  }

  void sts(const std::string& rel) {
    each_row(rel, [&](const std::vector<std::string>& r, auto col) {
      double score = 0;
      try {
        score = std::stod(r[col("score")]);
      } catch (const std::exception&) {
        SIEVE_THROW(rel << ": score '" << r[col("score")] << "' is not a number");
      }
      if (score >= opt.sts_min_score) add("mixed", r[col("sentence1")], r[col("sentence2")], "sts_paraphrase", 1);
    });
  }

  void contradictions(const std::string& rel, const std::string& category) {
    each_row(rel, [&](const std::vector<std::string>& r, auto col) {
      const std::string &p = r[col("premise")], &h = r[col("hypothesis")];
      if (r[col("label")] == "contradiction" && word_jaccard(p, h) >= opt.contradiction_min_overlap)
        add("mixed", p, h, category, 0);
    });
  }

  // CondaQA: a sentence with a negation cue and a crowd worker's edit; paraphrase edits keep the
  // meaning, scope and affirmative edits change it.
  void condaqa(const std::string& rel) {
    each_row(rel, [&](const std::vector<std::string>& r, auto col) {
      const std::string& c = r[col("category")];
      const std::string& label = r[col("label")];
      SIEVE_THROW_IF_NOT(label == "0" || label == "1", rel << ": label '" << label << "' is neither 0 nor 1");
      add("condaqa", r[col("sentence1")], r[col("sentence2")], "condaqa_" + c, label == "1" ? 1 : 0);
    });
  }

  // CANNOT: a sentence and a negation of it (every pair a near-miss).
  void cannot(const std::string& rel) {
    each_row(rel, [&](const std::vector<std::string>& r, auto col) {
      add("cannot", r[col("sentence1")], r[col("sentence2")], "cannot_negation", 0);
    });
  }

  void sugarcrepe(const std::string& rel) {
    each_row(rel, [&](const std::vector<std::string>& r, auto col) {
      const std::string& c = r[col("category")];
      if (c.rfind("swap_", 0) == 0 || c.rfind("replace_", 0) == 0)
        add("mixed", r[col("original")], r[col("near_miss")], "sugarcrepe_" + c, 0);
    });
  }
};

}  // namespace

std::vector<std::string> word_tokens(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c >= 0x80) {
      cur += static_cast<char>(std::tolower(c));
    } else if (!cur.empty()) {
      out.push_back(std::move(cur));
      cur.clear();
    }
  }
  if (!cur.empty()) out.push_back(std::move(cur));
  return out;
}

double word_jaccard(const std::string& a, const std::string& b) {
  auto wa = word_tokens(a), wb = word_tokens(b);
  std::set<std::string> sa(wa.begin(), wa.end()), sb(wb.begin(), wb.end());
  if (sa.empty() && sb.empty()) return 0;
  size_t common = 0;
  for (const auto& w : sa) common += sb.count(w);
  return static_cast<double>(common) / static_cast<double>(sa.size() + sb.size() - common);
}

std::pair<std::vector<std::string>, std::vector<std::vector<std::string>>> read_quoted_tsv(const std::string& path) {
  const std::string text = read_file(path);
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> row;
  std::string field;
  size_t line = 1;
  bool in_quotes = false, quoted_field = false, at_field_start = true;
  auto end_row = [&] {
    row.push_back(std::move(field));
    field.clear();
    if (!(row.size() == 1 && row[0].empty())) rows.push_back(std::move(row));
    row.clear();
    at_field_start = true;
    quoted_field = false;
  };
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_quotes) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        in_quotes = false;
      } else {
        if (c == '\n') ++line;
        field += c;
      }
      continue;
    }
    if (c == '"' && at_field_start) {
      in_quotes = quoted_field = true;
      at_field_start = false;
    } else if (c == '\t') {
      row.push_back(std::move(field));
      field.clear();
      at_field_start = true;
      quoted_field = false;
    } else if (c == '\n') {
      if (!field.empty() && field.back() == '\r') field.pop_back();
      end_row();
      ++line;
    } else {
      SIEVE_THROW_IF_NOT(!quoted_field || c == '\r',
                         path << ":" << line << ": text after the closing quote of a quoted field");
      field += c;
      at_field_start = false;
    }
  }
  SIEVE_THROW_IF_NOT(!in_quotes, path << ":" << line << ": unterminated quoted field");
  if (!field.empty() || !row.empty()) {
    if (!field.empty() && field.back() == '\r') field.pop_back();
    end_row();
  }
  SIEVE_THROW_IF_NOT(!rows.empty(), path << ": empty file (a header row is required)");
  std::vector<std::string> header = std::move(rows.front());
  if (!header.empty() && header[0].compare(0, 3, "\xEF\xBB\xBF") == 0) header[0].erase(0, 3);
  rows.erase(rows.begin());
  return {std::move(header), std::move(rows)};
}

ParaphraseSets build_paraphrase_sets(const ParaphraseSetOptions& opt) {
  SIEVE_THROW_IF_NOT(is_dir(opt.shared_data), "'" << opt.shared_data << "' is not a folder (give the shared data folder)");
  SIEVE_THROW_IF_NOT(opt.eval_fraction > 0 && opt.eval_fraction < 1, "the evaluation fraction must lie in (0, 1)");
  SIEVE_THROW_IF_NOT(opt.dev_fraction >= 0 && opt.eval_fraction + opt.dev_fraction < 1,
                     "the development fraction must not be negative, and with the evaluation fraction stay below 1");
  Builder b(opt);
  b.labelled("pairs/paws-wiki-dev.tsv", "paws");
  b.labelled("pairs/mrpc-train.tsv", "mrpc");
  b.labelled("pairs/qqp-ni.tsv", "qqp");  // question duplicates: the caching case
  for (const char* f : {"pairs/stsb-train.tsv", "pairs/stsb-dev.tsv", "pairs/stsb-test.tsv"}) b.sts(f);
  for (const char* f : {"pairs/snli-dev.tsv", "pairs/snli-test.tsv"}) b.contradictions(f, "snli_contradiction");
  b.contradictions("pairs/mnli-contradicting.tsv", "mnli_contradiction");
  for (const char* f : {"pairs/negation-nli-snli.tsv", "pairs/negation-nli-mnli.tsv", "pairs/negation-nli-rte.tsv"})
    b.contradictions(f, "negnli_contradiction");
  b.sugarcrepe("nearmiss/sugarcrepe.tsv");
  b.condaqa("pairs/condaqa-dev-edits.tsv");
  b.cannot("pairs/cannot-negations.tsv");

  // One sentence graph over every shared pair: a sentence never lands in two parts.
  Components comp;
  for (const auto& p : b.pending) comp.join(p.pair.sentence1, p.pair.sentence2);
  const uint64_t cut = static_cast<uint64_t>(opt.eval_fraction * 1e6);
  const uint64_t dev_cut = cut + static_cast<uint64_t>(opt.dev_fraction * 1e6);
  ParaphraseSets sets;
  std::set<std::pair<std::string, std::string>> seen;
  size_t duplicates = 0;
  for (auto& p : b.pending) {
    if (!seen.emplace(p.set + "\t" + p.pair.category, normalise(p.pair.sentence1) + "\t" + normalise(p.pair.sentence2))
             .second) {
      ++duplicates;
      continue;
    }
    // FNV-1a of the component's key; the seed moves the start (seed 0: plain FNV-1a).
    const uint64_t start = kFnv1aOffset ^ (opt.seed * 0x9E3779B97F4A7C15ull);
    const uint64_t h = fnv1a(comp.key(p.pair.sentence1), start) % 1000000;
    (h < cut ? sets.eval : h < dev_cut ? sets.dev : sets.train)[p.set].push_back(std::move(p.pair));
  }

  size_t generated = 0;
  if (!opt.generated.empty()) {
    for (const auto& g : read_pairs(opt.generated)) {
      SIEVE_THROW_IF_NOT(!g.category.empty(), opt.generated << ": a generated pair has no category");
      const bool pos = std::find(opt.generated_positive.begin(), opt.generated_positive.end(), g.category) !=
                       opt.generated_positive.end();
      sets.eval["mixed"].push_back({clean_field(g.sentence1), clean_field(g.sentence2), g.category, pos ? 1 : 0});
      ++generated;
    }
  }

  nlohmann::json rep;
  rep["rules"] = {{"split", "connected components of the sentence graph (case- and space-insensitive), FNV-1a of "
                            "the smallest sentence of each, seed " + std::to_string(opt.seed)},
                  {"eval_fraction", opt.eval_fraction},
                  {"dev_fraction", opt.dev_fraction},
                  {"sts_min_score", opt.sts_min_score},
                  {"contradiction_min_overlap", opt.contradiction_min_overlap},
                  {"generated", opt.generated.empty() ? nlohmann::json(nullptr) : nlohmann::json(opt.generated)}};
  rep["read"] = b.read;
  rep["missing"] = b.missing;
  rep["duplicates_dropped"] = duplicates;
  rep["generated_pairs"] = generated;
  for (const auto* part : {&sets.train, &sets.dev, &sets.eval}) {
    const char* name = part == &sets.train ? "train" : part == &sets.dev ? "dev" : "eval";
    for (const auto& [set, pairs] : *part) {
      std::map<std::string, size_t> per;
      size_t pos = 0;
      for (const auto& p : pairs) {
        ++per[p.category];
        pos += p.label;
      }
      rep["sets"][set][name] = {{"pairs", pairs.size()}, {"positives", pos}, {"categories", per}};
    }
  }
  sets.report = std::move(rep);
  return sets;
}

void write_paraphrase_sets(const ParaphraseSets& sets, const std::string& out_dir) {
  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  SIEVE_THROW_IF_NOT(is_dir(out_dir), "cannot create '" << out_dir << "': " << ec.message());
  for (const auto* part : {&sets.train, &sets.dev, &sets.eval}) {
    const char* name = part == &sets.train ? "train" : part == &sets.dev ? "dev" : "eval";
    for (const auto& [set, pairs] : *part) {
      std::ostringstream s;
      s << "sentence1\tsentence2\tcategory\tlabel\n";
      for (const auto& p : pairs) s << p.sentence1 << '\t' << p.sentence2 << '\t' << p.category << '\t' << p.label << '\n';
      write_file_atomic(path_join(out_dir, set + "-" + name + ".tsv"), s.str());
    }
  }
  write_file_atomic(path_join(out_dir, "report.json"), sets.report.dump(2) + "\n");
}

}  // namespace sieve::eval
