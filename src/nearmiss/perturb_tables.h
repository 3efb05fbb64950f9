// Word tables shared by the perturbations (perturb_*.cpp; defined in perturb_tables.cpp) and the edit check (edit_check.cpp).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace sieve::nearmiss {

/// Negation flips of quantifiers and adverbs: some/all/every <-> no, something <-> nothing, ...
const std::vector<std::pair<std::string, std::string>>& quantifier_flips();

/// Where a spatial word may flip: anywhere, in a side context ("left of"), before an object, or
/// after a determiner ("the top").
enum class Ctx { Any, Side, Object, AfterDet };
struct SpatialRule {
  const char* from;
  const char* to;
  Ctx ctx;
};
/// The spatial pairs (each direction listed).
const std::vector<SpatialRule>& spatial_rules();

/// Determiner rewrites that keep the meaning (each direction listed), as lower-case word strings.
const std::vector<std::pair<std::string, std::string>>& determiner_rules();
/// Complementary antonyms (no middle ground: "not X" means Y), each direction listed; a pair is
/// used only when WordNet also lists it as an antonym pair. Adjectives after a copula, verbs
/// after do-support or a modal.
const std::vector<std::pair<std::string, std::string>>& complementary_adjectives();
const std::vector<std::pair<std::string, std::string>>& complementary_verbs();

}  // namespace sieve::nearmiss
