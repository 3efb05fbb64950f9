// The tiny random BERT most tests encode with: 1 layer, width 32, 64 tokens (fast on any CPU).
#pragma once

#include <cstdint>

#include "sieve/model.h"

namespace sieve::test {

inline FixtureModelOptions tiny_model_options(uint64_t seed = 42) {
  FixtureModelOptions f;
  f.config.hidden_size = 32;
  f.config.num_hidden_layers = 1;
  f.config.num_attention_heads = 2;
  f.config.intermediate_size = 64;
  f.config.max_position_embeddings = 64;
  f.max_seq_length = 64;
  f.seed = seed;
  return f;
}

}  // namespace sieve::test
