// The word tables of perturb_tables.h (quantifier flips, spatial pairs, determiner rewrites,
// complementary antonyms), shared by the perturbations and the edit check.
#include "nearmiss/perturb_tables.h"

#include <initializer_list>

namespace sieve::nearmiss {

const std::vector<std::pair<std::string, std::string>>& quantifier_flips() {
  static const std::vector<std::pair<std::string, std::string>> v = {
      {"some", "no"}, {"all", "no"}, {"every", "no"}, {"something", "nothing"},
      {"everything", "nothing"}, {"somebody", "nobody"}, {"someone", "nobody"},
      {"everybody", "nobody"}, {"everyone", "nobody"}, {"always", "never"}};
  return v;
}

const std::vector<SpatialRule>& spatial_rules() {
  static const std::vector<SpatialRule> v = {
      {"left", "right", Ctx::Side},         {"right", "left", Ctx::Side},
      {"above", "below", Ctx::Any},         {"below", "above", Ctx::Any},
      {"over", "under", Ctx::Object},       {"under", "over", Ctx::Object},
      {"in front of", "behind", Ctx::Any},  {"behind", "in front of", Ctx::Object},
      {"ahead of", "behind", Ctx::Any},     {"inside", "outside", Ctx::Any},
      {"outside", "inside", Ctx::Any},      {"before", "after", Ctx::Any},
      {"after", "before", Ctx::Any},        {"on top of", "beneath", Ctx::Any},
      {"beneath", "on top of", Ctx::Object}, {"underneath", "on top of", Ctx::Object},
      {"upstairs", "downstairs", Ctx::Any}, {"downstairs", "upstairs", Ctx::Any},
      {"uphill", "downhill", Ctx::Any},     {"downhill", "uphill", Ctx::Any},
      {"upward", "downward", Ctx::Any},     {"downward", "upward", Ctx::Any},
      {"upwards", "downwards", Ctx::Any},   {"downwards", "upwards", Ctx::Any},
      {"upstream", "downstream", Ctx::Any}, {"downstream", "upstream", Ctx::Any},
      {"north", "south", Ctx::Any},         {"south", "north", Ctx::Any},
      {"east", "west", Ctx::Any},           {"west", "east", Ctx::Any},
      {"northern", "southern", Ctx::Any},   {"southern", "northern", Ctx::Any},
      {"eastern", "western", Ctx::Any},     {"western", "eastern", Ctx::Any},
      {"top", "bottom", Ctx::AfterDet},     {"bottom", "top", Ctx::AfterDet},
      {"upper", "lower", Ctx::AfterDet},    {"lower", "upper", Ctx::AfterDet},
      {"inner", "outer", Ctx::AfterDet},    {"outer", "inner", Ctx::AfterDet},
      {"interior", "exterior", Ctx::AfterDet}, {"exterior", "interior", Ctx::AfterDet},
      {"forward", "backward", Ctx::Any},    {"backward", "forward", Ctx::Any},
      {"forwards", "backwards", Ctx::Any},  {"backwards", "forwards", Ctx::Any},
      {"clockwise", "counterclockwise", Ctx::Any}, {"counterclockwise", "clockwise", Ctx::Any},
      {"into", "out of", Ctx::Object},      {"near", "far from", Ctx::Object},
      {"toward", "away from", Ctx::Object}, {"towards", "away from", Ctx::Object},
      {"away from", "toward", Ctx::Object},
  };
  return v;
}


const std::vector<std::pair<std::string, std::string>>& determiner_rules() {
  static const std::vector<std::pair<std::string, std::string>> v = {
      {"every", "each"},          {"each", "every"},          {"all the", "all of the"}, {"all of the", "all the"},
      {"both the", "both of the"}, {"both of the", "both the"}, {"a lot of", "lots of"},  {"lots of", "a lot of"}};
  return v;
}

namespace {
// Both directions of each pair.
std::vector<std::pair<std::string, std::string>> both_ways(
    std::initializer_list<std::pair<const char*, const char*>> pairs) {
  std::vector<std::pair<std::string, std::string>> v;
  for (const auto& p : pairs) {
    v.emplace_back(p.first, p.second);
    v.emplace_back(p.second, p.first);
  }
  return v;
}
}  // namespace

const std::vector<std::pair<std::string, std::string>>& complementary_adjectives() {
  static const auto v = both_ways({{"dead", "alive"},         {"absent", "present"},     {"possible", "impossible"},
                                   {"legal", "illegal"},      {"visible", "invisible"},  {"correct", "incorrect"},
                                   {"true", "false"},         {"complete", "incomplete"}, {"asleep", "awake"},
                                   {"equal", "unequal"},      {"married", "unmarried"},  {"finite", "infinite"},
                                   {"mortal", "immortal"},    {"literate", "illiterate"}, {"legitimate", "illegitimate"},
                                   {"open", "closed"},        {"same", "different"},     {"guilty", "innocent"},
                                   {"necessary", "unnecessary"}, {"audible", "inaudible"}});
  return v;
}

const std::vector<std::pair<std::string, std::string>>& complementary_verbs() {
  static const auto v = both_ways({{"forget", "remember"}, {"fail", "succeed"}});
  return v;
}

}  // namespace sieve::nearmiss
