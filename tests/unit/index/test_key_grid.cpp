// The arithmetic of an index's keys (issue 45): int8 keys depend on the CPU's weight grid (127
// levels with VNNI, 63 without), so the index records the grid it was built on; int8 queries run
// on that grid, and keys of another kind are refused for `add`. The references are encoders loaded
// directly on each grid.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "index/manifest.h"
#include "unit/index/index_test_util.h"
#include "model/packed_linear.h"
#include "sieve/encoder.h"
#include "sieve/error.h"
#include "sieve/index.h"
#include "support/test_util.h"

namespace sieve::test {
namespace {

EncoderOptions int8_on(int levels) {
  EncoderOptions e;
  e.precision = Precision::Int8;
  e.int8_levels = levels;
  return e;
}

std::vector<float> key_of(const Encoder& enc, const std::string& text) { return enc.encode({text}).pooled; }

double max_gap(const std::vector<float>& a, const std::vector<float>& b) {
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, static_cast<double>(std::fabs(a[i] - b[i])));
  return m;
}

// The native int8 pass's attention: bfloat16 operands where the CPU has bf16 products, fp32 elsewhere.
std::string native_attention() { return PackedLinear::cpu_has_bf16() ? "+bf16-attention" : "+fp32-attention"; }

TEST(KeyGrid, EncodersNameTheirGrid) {
  EXPECT_EQ(Encoder::load(model_dir())->key_grid(), "fp32");
  EXPECT_EQ(Encoder::load(model_dir(), int8_on(63))->key_grid(), "int8-63" + native_attention());
  EXPECT_EQ(Encoder::load(model_dir(), int8_on(0))->key_grid(),
            "int8-" + std::to_string(PackedLinear::default_weight_levels()) + native_attention());
  EncoderOptions torch8 = int8_on(63);
  torch8.engine = Engine::Torch;  // libtorch's int8 pass: its attention in fp32
  EXPECT_EQ(Encoder::load(model_dir(), torch8)->key_grid(), "int8-63+fp32-attention");
  EXPECT_EQ(index::int8_levels_of_grid("int8-127"), 127);
  EXPECT_EQ(index::int8_levels_of_grid("int8-63"), 63);
  EXPECT_EQ(index::int8_levels_of_grid("int8-63+bf16-attention"), 63);
  EXPECT_EQ(index::int8_levels_of_grid("fp32"), 0);
  EXPECT_EQ(index::int8_levels_of_grid(""), 0);
  EXPECT_TRUE(index::key_grids_agree("int8-63+bf16-attention", "int8-63+bf16-attention"));
  EXPECT_FALSE(index::key_grids_agree("int8-63+bf16-attention", "int8-63+fp32-attention"));
  EXPECT_TRUE(index::key_grids_agree("int8-63", "int8-63+fp32-attention"));  // recorded before the attention was
  EXPECT_FALSE(index::key_grids_agree("int8-63", "int8-127+fp32-attention"));
  EXPECT_TRUE(index::key_grids_agree("", "fp32"));
}

// int8 keys made with bf16 attention (a CPU with bf16 products) and queries with fp32 attention
// (a CPU without) differ by more than rounding: the index records the whole recipe, and int8
// queries of another attention are refused by name; an index that records no attention (built
// before it was recorded) still opens. On a CPU with bf16 products the recipe says the native int8
// pass runs its attention in bf16 (EncodersNameTheirGrid): the recipe is read from the flag that
// builds the attention, so unwiring it fails there.
TEST(KeyGrid, Int8QueriesMeetTheIndexsAttentionArithmetic) {
  const std::string dir = make_temp_dir("idx_grid_attention");
  const auto docs = make_docs(30);
  build_index(model_dir(), write_jsonl(dir, "c.jsonl", docs), dir + "/ix", small_opts(), int8_on(63));
  index::Manifest m = index::read_manifest(dir + "/ix", index::kManifestFile);
  EXPECT_EQ(m.key_grid, "int8-63" + native_attention());
  IndexOpenOptions oo;
  oo.encoder = int8_on(0);
  EXPECT_EQ(Index::open(dir + "/ix", oo)->encoder()->key_grid(), m.key_grid);
  // The index as a CPU of the other attention would have recorded it.
  const std::string other = PackedLinear::cpu_has_bf16() ? "int8-63+fp32-attention" : "int8-63+bf16-attention";
  m.key_grid = other;
  index::write_manifest(dir + "/ix", index::kManifestFile, m);
  expect_error([&] { Index::open(dir + "/ix", oo); }, "another attention arithmetic");
  EXPECT_EQ(Index::open(dir + "/ix")->encoder()->key_grid(), "fp32");  // fp32 queries stay allowed
  expect_error([&] { add_to_index(dir + "/ix", write_jsonl(dir, "b.jsonl", make_docs(3, 100)), small_opts(), int8_on(0)); },
               "another attention arithmetic");
  // Recorded before the attention was: opens for int8 queries as it did.
  m.key_grid = "int8-63";
  index::write_manifest(dir + "/ix", index::kManifestFile, m);
  EXPECT_EQ(Index::open(dir + "/ix", oo)->encoder()->key_grid(), "int8-63" + native_attention());
}

TEST(KeyGrid, Int8QueriesRunOnTheGridTheIndexWasBuiltOn) {
  const std::string dir = make_temp_dir("idx_grid");
  const auto docs = make_docs(40);
  build_index(model_dir(), write_jsonl(dir, "c.jsonl", docs), dir + "/ix63", small_opts(), int8_on(63));
  IndexOpenOptions oo;
  oo.encoder = int8_on(0);  // this CPU's grid asked for; the index's is taken
  auto idx = Index::open(dir + "/ix63", oo);
  EXPECT_EQ(idx->stats().key_grid, "int8-63" + native_attention());
  ASSERT_EQ(idx->encoder()->key_grid(), "int8-63" + native_attention());
  const std::string q = expected_encoder_input(docs[5]);
  auto on63 = Encoder::load(model_dir(), int8_on(63));
  EXPECT_EQ(key_of(*idx->encoder(), q), key_of(*on63, q));
  // The document's own text finds its stored key exactly: the query ran on the keys' grid.
  SearchParams p;
  p.k = 1;
  const auto r = idx->search(q, p);
  ASSERT_EQ(r.hits.size(), 1u);
  EXPECT_EQ(r.hits[0].id, docs[5].id);
  EXPECT_NEAR(r.hits[0].score, 1.0, 1e-5);
  if (PackedLinear::cpu_has_vnni()) {
    // The grids differ by more than rounding (else the record would not matter).
    auto on127 = Encoder::load(model_dir(), int8_on(127));
    EXPECT_GT(max_gap(key_of(*on127, q), key_of(*on63, q)), 1e-4);
    // An encoder loaded on the other grid and handed in is refused by name.
    IndexOpenOptions given;
    given.encoder_instance = std::shared_ptr<const Encoder>(std::move(on127));
    expect_error([&] { Index::open(dir + "/ix63", given); }, "computes int8-127+");
  }
  // fp32 queries against int8 keys stay allowed (cosine within about 0.002).
  EXPECT_EQ(Index::open(dir + "/ix63")->encoder()->key_grid(), "fp32");
}

TEST(KeyGrid, AddRefusesKeysOfAnotherKind) {
  const std::string dir = make_temp_dir("idx_grid_add");
  build_index(model_dir(), write_jsonl(dir, "a.jsonl", make_docs(20)), dir + "/ix", small_opts());
  EXPECT_EQ(Index::open(dir + "/ix")->stats().key_grid, "fp32");
  const std::string more = write_jsonl(dir, "b.jsonl", make_docs(5, 100));
  expect_error([&] { add_to_index(dir + "/ix", more, small_opts(), int8_on(63)); },
               "added keys would be encoded in int8-63" + native_attention() + " but the index's keys are fp32");
  EXPECT_EQ(Index::open(dir + "/ix")->size(), 20u);  // nothing added
  add_to_index(dir + "/ix", more, small_opts());
  EXPECT_EQ(Index::open(dir + "/ix")->size(), 25u);
  // int8 on the index's own grid is taken for adds too.
  build_index(model_dir(), write_jsonl(dir, "a.jsonl", make_docs(20)), dir + "/ix8", small_opts(), int8_on(63));
  add_to_index(dir + "/ix8", more, small_opts(), int8_on(0));
  EXPECT_EQ(Index::open(dir + "/ix8")->size(), 25u);
}

}  // namespace
}  // namespace sieve::test
