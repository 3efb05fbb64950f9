// The native forward pass (src/model/native_bert.cpp, issue 44) against libtorch's modules, the
// reference: token states and keys within float rounding for texts of many lengths batched
// together (padding, batch composition), on fixtures of several shapes and activations and on
// all-MiniLM-L6-v2 when it is installed; int8 near the libtorch int8 path; what it refuses.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "model/packed_linear.h"
#include "sieve/encoder.h"
#include "sieve/error.h"
#include "sieve/model.h"
#include "support/fixtures.h"
#include "support/test_util.h"

namespace sieve {
namespace {

std::vector<std::string> texts_of_many_lengths() {
  std::vector<std::string> t = {"a", "the dog bit the man", "the man bit the dog",
                                "a red car is parked near the river and the bridge over it is old"};
  std::string grow;
  for (int i = 0; i < 140; ++i) {
    grow += (i % 3 ? " river" : " stone");
    // Every length up to 36 words, then lengths the attention pads (to a multiple of 16 tokens).
    if (i % 7 == 0 && i < 40) t.push_back(grow);
    if (i == 60 || i == 111 || i == 139) t.push_back(grow);
  }
  for (const std::string& q : test::scifact_query_texts(80 - t.size())) t.push_back(q);
  return t;
}

// Largest |difference| of the keys and of the token states of two encodings of the same texts.
std::pair<double, double> max_gaps(const Embeddings& a, const Embeddings& b) {
  double keys = 0, states = 0;
  EXPECT_EQ(a.pooled.size(), b.pooled.size());
  for (size_t i = 0; i < a.pooled.size(); ++i) keys = std::max(keys, double(std::fabs(a.pooled[i] - b.pooled[i])));
  EXPECT_EQ(a.tokens.size(), b.tokens.size());
  for (size_t i = 0; i < a.tokens.size(); ++i) {
    EXPECT_EQ(a.tokens[i].length, b.tokens[i].length);
    EXPECT_EQ(a.tokens[i].ids, b.tokens[i].ids);
    for (size_t j = 0; j < a.tokens[i].values.size() && j < b.tokens[i].values.size(); ++j)
      states = std::max(states, double(std::fabs(a.tokens[i].values[j] - b.tokens[i].values[j])));
  }
  return {keys, states};
}

void expect_engines_agree(const std::string& dir, double tol) {
  EncoderOptions torch_opt, native_opt;
  torch_opt.engine = Engine::Torch;
  native_opt.engine = Engine::Native;
  auto reference = Encoder::load(dir, torch_opt);
  auto native = Encoder::load(dir, native_opt);
  const auto texts = texts_of_many_lengths();
  const int before = compute_threads();
  for (size_t batch : {size_t{1}, size_t{7}, size_t{32}}) {
    EncodeCall call;
    call.batch_size = batch;
    call.token_states = true;
    const Embeddings want = reference->encode(texts, call);
    // One thread and two: a batch's sequences run in groups on a thread each where there are
    // enough of them (two or more a thread), else each product on the whole team.
    for (int threads : {1, 2}) {
      set_compute_threads(threads);
      const auto [keys, states] = max_gaps(want, native->encode(texts, call));
      EXPECT_LE(keys, tol) << dir << " batch " << batch << ", " << threads << " threads";
      EXPECT_LE(states, tol * 10) << dir << " batch " << batch;  // unnormalised states are larger than unit keys
      // Another computation ran (its rounding differs somewhere), not the libtorch pass again.
      EXPECT_GT(states, 0.0) << dir << " batch " << batch;
    }
    set_compute_threads(before);
  }
}

// A fixture of width 48 with 4 heads, written under `dir`.
void write_shaped_fixture(const std::string& dir, uint64_t seed, const char* family, const char* act, int64_t layers,
                          int64_t positions = 64, size_t tokens = 64) {
  FixtureModelOptions f = test::tiny_model_options(seed);
  f.config.model_type = family;
  f.config.hidden_act = act;
  f.config.num_hidden_layers = layers;
  f.config.hidden_size = 48;
  f.config.num_attention_heads = 4;
  f.config.intermediate_size = 96;
  f.config.max_position_embeddings = positions;
  f.max_seq_length = tokens;
  write_fixture_model(dir, f);
}

TEST(NativeBert, EqualsTheLibtorchPassOnFixturesOfSeveralShapes) {
  const std::string root = test::make_temp_dir("native_bert");
  int k = 0;
  for (const char* act : {"gelu", "gelu_new", "relu"})
    for (int64_t layers : {1, 3}) {
      const std::string dir = root + "/m" + std::to_string(k);
      write_shaped_fixture(dir, static_cast<uint64_t>(7 + k++), "bert", act, layers);
      expect_engines_agree(dir, 1e-5);
    }
}

// RoBERTa's positions (from the ids, offset by padding_idx) and MPNet's relative position bias
// (every distance up to 159 tokens: the exact buckets, the logarithmic ones and the clamp past 128)
// and missing token types.
TEST(NativeBert, EqualsTheLibtorchPassOnRobertaAndMpnetFixtures) {
  const std::string root = test::make_temp_dir("native_families");
  int k = 0;
  for (const char* family : {"roberta", "xlm-roberta", "mpnet"})
    for (const char* act : {"gelu", "relu"}) {
      const std::string dir = root + "/m" + std::to_string(k);
      write_shaped_fixture(dir, static_cast<uint64_t>(20 + k++), family, act, 2, 200, 160);
      expect_engines_agree(dir, 1e-5);
    }
}

// Token ids straight into the pass: a pad id inside a text (its position row is padding_idx,
// the ranks after it skip it), batched with shorter and longer texts.
TEST(NativeBert, RobertaPositionsFromTheIdsEqualTheLibtorchEmbeddings) {
  const std::string root = test::make_temp_dir("native_positions");
  for (const char* family : {"roberta", "mpnet"}) {
    FixtureModelOptions f = test::tiny_model_options(31);
    f.config.model_type = family;
    f.config.pad_token_id = 1;
    f.config.num_hidden_layers = 2;
    const std::string dir = root + "/" + family;
    write_fixture_model(dir, f);
    EncoderOptions torch_opt, native_opt;
    torch_opt.engine = Engine::Torch;
    native_opt.engine = Engine::Native;
    auto reference = Encoder::load(dir, torch_opt);
    auto native = Encoder::load(dir, native_opt);
    const std::vector<std::vector<int32_t>> texts = {{0, 5, 1, 7, 9, 2}, {0, 4, 4, 1, 1, 6, 2}, {0, 2}};
    for (size_t batch : {size_t{1}, size_t{3}}) {
      EncodeCall call;
      call.batch_size = batch;
      call.token_states = true;
      const auto [keys, states] = max_gaps(reference->encode_ids(texts, call), native->encode_ids(texts, call));
      EXPECT_LE(keys, 1e-5) << family;
      EXPECT_LE(states, 1e-4) << family;
      EXPECT_GT(states, 0.0) << family;
    }
  }
}

TEST(NativeBert, EqualsTheLibtorchPassOnTheRealModel) {
  std::string dir;
  try {
    dir = resolve_model_dir("all-MiniLM-L6-v2");
  } catch (const Error&) {
    if (test::under_ci()) FAIL() << "all-MiniLM-L6-v2 is not installed (scripts/setup.sh installs it)";
    GTEST_SKIP() << "all-MiniLM-L6-v2 is not installed";
  }
  expect_engines_agree(dir, 1e-5);
}

// A small ModernBERT (a family the native pass does not run).
FixtureModelOptions modernbert_fixture() {
  FixtureModelOptions f = test::tiny_model_options();
  f.config.model_type = "modernbert";
  f.config.vocab_size = 0;  // the fixture's smallest BPE
  f.config.layer_norm_eps = 1e-5;
  return f;
}

// Mean and least cosine of two encodings' keys.
std::pair<double, double> key_cosines(const Embeddings& a, const Embeddings& b) {
  double sum = 0, lo = 1;
  const size_t n = a.pooled.size() / a.dim;
  for (size_t i = 0; i < n; ++i) {
    double c = 0;
    for (size_t j = 0; j < a.dim; ++j) c += double(a.pooled[i * a.dim + j]) * b.pooled[i * a.dim + j];
    sum += c;
    lo = std::min(lo, c);
  }
  return {sum / static_cast<double>(n), lo};
}

// The real model when installed, else a 2-layer fixture from `seed` (outside CI only: set-up
// installs the real model, so under CI=true its absence is an error, not a quieter test).
std::string real_model_or_fixture(const std::string& name, uint64_t seed) {
  try {
    return resolve_model_dir("all-MiniLM-L6-v2");
  } catch (const Error& e) {
    if (test::under_ci())
      throw Error(std::string("all-MiniLM-L6-v2 is not installed (CI=true: set-up installs it): ") + e.what());
    const std::string dir = test::make_temp_dir(name) + "/model";
    FixtureModelOptions f = test::tiny_model_options(seed);
    f.config.num_hidden_layers = 2;
    write_fixture_model(dir, f);
    return dir;
  }
}

TEST(NativeBert, Int8StaysAsNearFp32AsTheLibtorchInt8Pass) {
  const std::string dir = real_model_or_fixture("native_int8", 11);
  // The same quantization of the same weights; but activations a float rounding apart may land in
  // another int8 step, so the two int8 passes are compared by how near each stays to fp32.
  EncoderOptions fp32, torch8, native8;
  torch8.precision = native8.precision = Precision::Int8;
  fp32.engine = torch8.engine = Engine::Torch;
  native8.engine = Engine::Native;
  const auto texts = texts_of_many_lengths();
  const Embeddings ref = Encoder::load(dir, fp32)->encode(texts, {});
  const Embeddings t8 = Encoder::load(dir, torch8)->encode(texts, {});
  const Embeddings n8 = Encoder::load(dir, native8)->encode(texts, {});
  EXPECT_NE(t8.pooled, n8.pooled);  // the native pass ran, not the libtorch one
  const auto [t_mean, t_min] = key_cosines(ref, t8);
  const auto [n_mean, n_min] = key_cosines(ref, n8);
  std::printf("int8 vs fp32 key cosine on %s: torch mean %.5f min %.5f; native mean %.5f min %.5f\n", dir.c_str(),
              t_mean, t_min, n_mean, n_min);
  EXPECT_GE(n_mean, 0.995);
  EXPECT_GE(n_min, 0.98);
  EXPECT_NEAR(n_mean, t_mean, 1e-3);
}

TEST(NativeBert, Bf16StaysAsNearFp32AsTheLibtorchBf16Pass) {
  const std::string dir = real_model_or_fixture("native_bf16", 12);
  EncoderOptions fp32, torch16, native16;
  torch16.precision = native16.precision = Precision::Bf16;
  fp32.engine = torch16.engine = Engine::Torch;
  native16.engine = Engine::Native;
  std::shared_ptr<Encoder> t_enc, n_enc;
  try {
    t_enc = Encoder::load(dir, torch16);
  } catch (const Error& e) {
    ASSERT_FALSE(PackedLinear::cpu_has_bf16()) << e.what();
    GTEST_SKIP() << "this CPU has no oneDNN bf16 product (no AVX-512)";
  }
  n_enc = Encoder::load(dir, native16);
  EXPECT_EQ(t_enc->key_grid(), "bf16");
  EXPECT_EQ(n_enc->key_grid(), "bf16");
  const auto texts = texts_of_many_lengths();
  const Embeddings ref = Encoder::load(dir, fp32)->encode(texts, {});
  const Embeddings t16 = t_enc->encode(texts, {});
  const Embeddings n16 = n_enc->encode(texts, {});
  const auto [t_mean, t_min] = key_cosines(ref, t16);
  const auto [n_mean, n_min] = key_cosines(ref, n16);
  std::printf("bf16 vs fp32 key cosine on %s: torch mean %.6f min %.6f; native mean %.6f min %.6f\n", dir.c_str(),
              t_mean, t_min, n_mean, n_min);
  EXPECT_GE(n_mean, 0.999);
  EXPECT_GE(n_min, 0.995);
  EXPECT_LT(n_mean, 1.0 - 1e-7);  // bf16 ran
  EXPECT_NEAR(n_mean, t_mean, 2e-4);
  // The two bf16 passes round the same operands: their keys are nearer each other than to fp32.
  const auto [tn_mean, tn_min] = key_cosines(t16, n16);
  EXPECT_GE(tn_min, n_min);
}

// The default engine, auto: the native pass for the BERT family on the CPU (the same keys bit
// for bit), libtorch's for another family (ModernBERT, where native is refused).
TEST(NativeBert, AutoRunsNativeWhereItRunsAndTorchElsewhere) {
  const std::string root = test::make_temp_dir("native_auto");
  EncoderOptions automatic, torch, native;
  EXPECT_EQ(automatic.engine, Engine::Auto);  // the default
  torch.engine = Engine::Torch;
  native.engine = Engine::Native;
  const std::vector<std::string> texts = {"the dog bit the man", "a", "the man bit the dog near the old stone bridge"};
  FixtureModelOptions f = test::tiny_model_options(6);
  write_fixture_model(root + "/bert", f);
  const auto a = Encoder::load(root + "/bert", automatic)->encode(texts, {}).pooled;
  EXPECT_EQ(a, Encoder::load(root + "/bert", native)->encode(texts, {}).pooled);
  EXPECT_NE(a, Encoder::load(root + "/bert", torch)->encode(texts, {}).pooled);
  for (const char* family : {"roberta", "mpnet"}) {
    f.config.model_type = family;
    f.config.pad_token_id = 1;
    const std::string dir = root + "/" + family;
    write_fixture_model(dir, f);
    const auto af = Encoder::load(dir, automatic)->encode(texts, {}).pooled;
    EXPECT_EQ(af, Encoder::load(dir, native)->encode(texts, {}).pooled) << family;
    EXPECT_NE(af, Encoder::load(dir, torch)->encode(texts, {}).pooled) << family;
  }
  write_fixture_model(root + "/modernbert", modernbert_fixture());
  EXPECT_EQ(Encoder::load(root + "/modernbert", automatic)->encode(texts, {}).pooled,
            Encoder::load(root + "/modernbert", torch)->encode(texts, {}).pooled);
}

TEST(NativeBert, OtherFamiliesAndNamesAreRefused) {
  const std::string dir = test::make_temp_dir("native_refuse") + "/model";
  write_fixture_model(dir, modernbert_fixture());
  EncoderOptions o;
  o.engine = Engine::Native;
  test::expect_error([&] { Encoder::load(dir, o); }, "the native engine runs the BERT family");
  EXPECT_EQ(engine_from_name("native"), Engine::Native);
  EXPECT_EQ(engine_from_name("torch"), Engine::Torch);
  EXPECT_STREQ(engine_name(Engine::Native), "native");
  EXPECT_EQ(engine_from_name("auto"), Engine::Auto);
  EXPECT_STREQ(engine_name(Engine::Auto), "auto");
  test::expect_error([] { engine_from_name("onnx"); }, "unknown engine 'onnx'");
}

}  // namespace
}  // namespace sieve
