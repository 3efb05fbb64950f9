#include "nearmiss/generate.h"

#include <cctype>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <unordered_map>

#include "core/file_util.h"
#include "sieve/error.h"

namespace sieve::nearmiss {

namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string csv_field(const std::string& f) {
  if (f.find_first_of(",\"\r\n") == std::string::npos) return f;
  std::string out = "\"";
  for (char c : f) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string tsv_field(std::string f) {
  for (char& c : f)
    if (c == '\t' || c == '\n' || c == '\r') c = ' ';
  return f;
}

}  // namespace

std::vector<NearMiss> generate(const std::vector<std::string>& sentences, const std::vector<Kind>& kinds,
                               uint64_t seed, const Lexicon& lex, GenerateReport* report) {
  Perturber perturber(lex);
  std::vector<NearMiss> out;
  GenerateReport r;
  for (Kind k : kinds) r.yielded[kind_name(k)] = 0;
  for (size_t i = 0; i < sentences.size(); ++i) {
    ++r.inputs;
    bool any = false;
    for (Kind k : kinds) {
      // A stream per (seed, sentence, kind): output does not depend on the other kinds.
      std::seed_seq seq{seed, static_cast<uint64_t>(i), static_cast<uint64_t>(k)};
      std::mt19937_64 rng(seq);
      auto p = perturber.apply(sentences[i], k, rng);
      if (!p) continue;
      any = true;
      ++r.yielded[kind_name(k)];
      out.push_back({sentences[i], *p, k, ""});
    }
    if (!any) ++r.skipped;
  }
  if (report) *report = r;
  return out;
}

std::string row_category(const NearMiss& r) { return r.given.empty() ? kind_name(r.kind) : r.given; }
bool row_positive(const NearMiss& r) { return !r.given.empty() || is_positive(r.kind); }

std::vector<NearMiss> add_given_paraphrases(const std::vector<NearMiss>& rows,
                                            const std::vector<std::array<std::string, 3>>& pairs) {
  std::unordered_map<std::string, std::vector<const std::array<std::string, 3>*>> by_source;
  for (const auto& p : pairs) by_source[p[0]].push_back(&p);
  std::vector<NearMiss> out;
  out.reserve(rows.size() + pairs.size());
  for (size_t begin = 0; begin < rows.size();) {
    size_t end = begin + 1;
    while (end < rows.size() && rows[end].source == rows[begin].source) ++end;
    out.insert(out.end(), rows.begin() + static_cast<std::ptrdiff_t>(begin), rows.begin() + static_cast<std::ptrdiff_t>(end));
    if (auto it = by_source.find(rows[begin].source); it != by_source.end())
      for (const auto* p : it->second) {
        NearMiss g;
        g.source = (*p)[0];
        g.perturbed = (*p)[1];
        g.given = (*p)[2].empty() ? "given" : (*p)[2];
        out.push_back(std::move(g));
      }
    begin = end;
  }
  return out;
}

double word_overlap(const std::string& a, const std::string& b) {
  auto words = [](const std::string& s) {
    std::set<std::string> w;
    std::string cur;
    for (char ch : s) {
      const auto c = static_cast<unsigned char>(ch);
      if (std::isalnum(c) || c >= 0x80) {
        cur += static_cast<char>(std::tolower(c));
      } else if (!cur.empty()) {
        w.insert(cur);
        cur.clear();
      }
    }
    if (!cur.empty()) w.insert(cur);
    return w;
  };
  const std::set<std::string> x = words(a), y = words(b);
  if (x.empty() && y.empty()) return 1.0;
  size_t common = 0;
  for (const auto& w : x) common += y.count(w);
  return static_cast<double>(common) / static_cast<double>(x.size() + y.size() - common);
}

std::vector<Triplet> to_triplets(const std::vector<NearMiss>& rows, bool reversed) {
  std::vector<Triplet> out;
  for (size_t begin = 0; begin < rows.size();) {
    // generate() emits a source's rows consecutively; a source repeated later is a new group.
    size_t end = begin + 1;
    while (end < rows.size() && rows[end].source == rows[begin].source) ++end;
    std::vector<const NearMiss*> rewrites;
    for (size_t i = begin; i < end; ++i)
      if (row_positive(rows[i])) rewrites.push_back(&rows[i]);
    for (size_t i = begin; i < end; ++i) {
      const NearMiss& r = rows[i];
      if (row_positive(r)) continue;
      out.push_back({r.source, r.source, r.perturbed, kind_name(r.kind)});
      for (const NearMiss* p : rewrites) {
        const std::string cat = std::string(kind_name(r.kind)) + "+" + row_category(*p);
        out.push_back({r.source, p->perturbed, r.perturbed, cat});
        // The rewrite as the anchor: a query may be the passive of a document, not only the
        // reverse; a near-miss of the source is a near-miss of its rewrite too.
        if (reversed) out.push_back({p->perturbed, r.source, r.perturbed, cat + "_reversed"});
      }
    }
    begin = end;
  }
  return out;
}

std::vector<bool> spread_indices(size_t n, size_t max) {
  std::vector<bool> keep(n, true);
  if (max == 0 || n <= max) return keep;
  for (size_t i = 0; i < n; ++i) keep[i] = i == 0 ? true : (i * max / n) != ((i - 1) * max / n);
  return keep;
}

size_t write_nearmisses(const std::string& path, const std::vector<NearMiss>& rows, Layout layout,
                        size_t max_per_category, bool reversed) {
  std::ostringstream o;
  const bool jsonl = ends_with(path, ".jsonl"), tsv = ends_with(path, ".tsv");
  const std::vector<std::string> header = layout == Layout::Pairs
                                              ? std::vector<std::string>{"sentence1", "sentence2", "category"}
                                              : std::vector<std::string>{"anchor", "positive", "negative", "category"};
  if (!jsonl)
    for (size_t i = 0; i < header.size(); ++i) o << (i ? (tsv ? "\t" : ",") : "") << header[i];
  if (!jsonl) o << "\n";
  std::vector<std::vector<std::string>> fields;
  if (layout == Layout::Pairs) {
    for (const NearMiss& r : rows) fields.push_back({r.source, r.perturbed, row_category(r)});
  } else {
    for (Triplet& t : to_triplets(rows, reversed))
      fields.push_back({std::move(t.anchor), std::move(t.positive), std::move(t.negative), std::move(t.category)});
  }
  if (max_per_category > 0) {  // the category is the last field in both layouts
    std::map<std::string, std::vector<size_t>> by_cat;
    for (size_t i = 0; i < fields.size(); ++i) by_cat[fields[i].back()].push_back(i);
    std::vector<bool> keep(fields.size(), false);
    for (const auto& [cat, idx] : by_cat) {
      const std::vector<bool> k = spread_indices(idx.size(), max_per_category);
      for (size_t j = 0; j < idx.size(); ++j) keep[idx[j]] = k[j];
    }
    std::vector<std::vector<std::string>> kept;
    for (size_t i = 0; i < fields.size(); ++i)
      if (keep[i]) kept.push_back(std::move(fields[i]));
    fields = std::move(kept);
  }
  for (const std::vector<std::string>& f : fields) {
    if (jsonl) {
      nlohmann::json j;
      for (size_t i = 0; i < header.size(); ++i) j[header[i]] = f[i];
      o << j.dump() << "\n";
      continue;
    }
    for (size_t i = 0; i < f.size(); ++i) o << (i ? (tsv ? "\t" : ",") : "") << (tsv ? tsv_field(f[i]) : csv_field(f[i]));
    o << "\n";
  }
  write_file_atomic(path, o.str());
  return fields.size();
}

const char* paper_category(Kind k) {
  switch (k) {
    case Kind::Negation:
      return "cannot_negation";
    case Kind::BindingSwap:
      return "binding_negation";
    case Kind::SpatialFlip:
      return "spatial";
    default:
      return "";
  }
}

std::vector<Kind> default_kinds() {
  return {Kind::Negation, Kind::RoleSwap, Kind::BindingSwap, Kind::SpatialFlip, Kind::Antonym};
}

}  // namespace sieve::nearmiss
