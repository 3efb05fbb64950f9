// Random token states with ids, for the tests of the map channels that read token ids.
#pragma once

#include <random>
#include <vector>

#include "sieve/encoder.h"

namespace sieve::test {

constexpr size_t kIdsDim = 16;

/// Random states (kIdsDim wide) with ids drawn from a small vocabulary, so that ids repeat.
inline TokenStates tokens_with_ids(size_t len, std::mt19937& rng, int vocab = 6) {
  std::normal_distribution<float> g;
  std::uniform_int_distribution<int> id(0, vocab - 1);
  TokenStates t;
  t.length = len;
  t.values.resize(len * kIdsDim);
  for (auto& v : t.values) v = g(rng);
  for (size_t i = 0; i < len; ++i) t.ids.push_back(id(rng));
  return t;
}

inline std::vector<const TokenStates*> ptrs(const std::vector<TokenStates>& v) {
  std::vector<const TokenStates*> p;
  for (auto& t : v) p.push_back(&t);
  return p;
}

}  // namespace sieve::test
