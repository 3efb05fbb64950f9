// Spatial flips: left/right, above/below, in front of/behind, ... (the pairs of perturb_tables.h).
#include <set>
#include <string>
#include <vector>

#include "nearmiss/perturb_rules.h"
#include "nearmiss/perturb_tables.h"

namespace sieve::nearmiss::rules {

namespace {

bool object_follows(const Sentence& s, size_t e) {
  if (e >= s.tokens.size()) return false;
  Tag g = s.tokens[e].tag;
  return g == Tag::Det || g == Tag::Poss || g == Tag::Num || g == Tag::Noun || g == Tag::Adj || g == Tag::Propn ||
         (g == Tag::Pron && lower(s.tokens[e].text) != "there") || g == Tag::Quant;
}

}  // namespace

void spatial_candidates(const Sentence& s, std::vector<Sentence>& out) {
  const auto& t = s.tokens;
  static const std::set<std::string> kSideNouns = {"of", "side", "hand", "wing", "arm", "leg", "foot", "eye",
                                                   "ear", "bank", "turn", "field", "corner", "edge", "margin",
                                                   "lane", "half", "-hand", "shoulder", "knee", "wrist"};
  for (size_t i = 0; i < t.size(); ++i) {
    for (const auto& rule : spatial_rules()) {
      Words from = split_words(rule.from);
      if (i + from.size() > t.size()) continue;
      bool match = true;
      for (size_t k = 0; k < from.size(); ++k)
        if (lower(t[i + k].text) != from[k]) match = false;
      if (!match) continue;
      size_t e = i + from.size();
      std::string prev = i > 0 ? lower(t[i - 1].text) : "";
      Tag prev_tag = i > 0 ? t[i - 1].tag : Tag::Other;
      switch (rule.ctx) {
        case Ctx::Side: {
          if (prev_tag == Tag::Pron || prev_tag == Tag::Propn || prev_tag == Tag::Noun || prev_tag == Tag::Have ||
              prev_tag == Tag::Neg || prev_tag == Tag::Modal || prev_tag == Tag::Do)
            continue;
          std::string next = e < t.size() ? lower(t[e].text) : "";
          bool side = kSideNouns.count(next) > 0;
          bool bare = (prev == "the" || prev == "to" || prev == "on") && (e >= t.size() || t[e].tag == Tag::Punct);
          if (!side && !bare) continue;
          break;
        }
        case Ctx::Object:
          if (!object_follows(s, e)) continue;
          break;
        case Ctx::AfterDet:
          if (!(prev_tag == Tag::Det || prev_tag == Tag::Poss)) continue;
          break;
        case Ctx::Any:
          // "look forward to", "look back on": idioms, not directions.
          if ((from[0] == "forward" || from[0] == "backward" || from[0] == "forwards" || from[0] == "backwards") &&
              e < t.size() && lower(t[e].text) == "to")
            continue;
          break;
      }
      Sentence r = s;
      Words to = split_words(rule.to);
      std::vector<Token> repl;
      for (size_t k = 0; k < to.size(); ++k)
        repl.push_back(make_token(k == 0 ? case_like(t[i].text, to[k]) : to[k], k == 0 ? t[i].space_before : " ",
                                  Tag::Prep));
      r.tokens.erase(r.tokens.begin() + i, r.tokens.begin() + e);
      r.tokens.insert(r.tokens.begin() + i, repl.begin(), repl.end());
      out.push_back(r);
    }
  }
}

}  // namespace sieve::nearmiss::rules
