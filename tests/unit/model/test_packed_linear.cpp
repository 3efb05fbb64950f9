// PackedLinear (oneDNN matmul over prepacked weights) against at::linear and against a naive
// int8 reference written here from the formulas in packed_linear.h; the int8 encoder against fp32.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
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

double max_abs(const at::Tensor& t) { return t.abs().max().item<double>(); }

TEST(PackedLinear, Fp32EqualsAtLinearForAnyLeadingShape) {
  at::manual_seed(1);
  const at::Tensor w = at::randn({48, 40}), b = at::randn({48});
  PackedLinear with_bias(w, b, Precision::Fp32), without(w, at::Tensor(), Precision::Fp32);
  EXPECT_EQ(with_bias.in_features(), 40);
  EXPECT_EQ(with_bias.out_features(), 48);
  for (std::vector<int64_t> shape : {std::vector<int64_t>{1, 40}, {7, 40}, {2, 5, 40}, {33, 40}, {0, 40}}) {
    const at::Tensor x = at::randn(shape);
    const at::Tensor y = with_bias.forward(x), want = at::linear(x, w, b);
    ASSERT_EQ(y.sizes(), want.sizes());
    if (x.numel() == 0) continue;
    EXPECT_LT(max_abs(y - want), 1e-5) << x.sizes();
    EXPECT_LT(max_abs(without.forward(x) - at::linear(x, w)), 1e-5) << x.sizes();
  }
  // A non-contiguous input (a transposed view) reads as its values.
  const at::Tensor xt = at::randn({40, 6}).t();
  EXPECT_LT(max_abs(with_bias.forward(xt) - at::linear(xt, w, b)), 1e-5);
}

// Row counts are cut into pieces, each with a primitive made for its exact count (up to 64 rows
// as they are; then 256-row chunks and a remainder cut at a multiple of 16): every cut must give
// the one product. Counts on each side of every boundary, against at::linear.
TEST(PackedLinear, EveryRowCountCutIntoPiecesGivesTheWholeProduct) {
  at::manual_seed(7);
  const at::Tensor w = at::randn({24, 20}), b = at::randn({24});
  PackedLinear p(w, b, Precision::Fp32);
  for (int64_t m : {1, 2, 15, 16, 17, 63, 64, 65, 79, 80, 81, 255, 256, 257, 320, 321, 513, 600}) {
    const at::Tensor x = at::randn({m, 20});
    EXPECT_LT(max_abs(p.forward(x) - at::linear(x, w, b)), 1e-5) << m << " rows";
  }
  // A row count seen before reuses its primitive and still answers for the new rows.
  const at::Tensor x = at::randn({65, 20});
  EXPECT_LT(max_abs(p.forward(x) - at::linear(x, w, b)), 1e-5);
}

// The fused activation (oneDNN's post-op in fp32, the epilogue's pass in int8) equals the
// activation applied after the product.
TEST(PackedLinear, FusedActivationsEqualTheActivationAfterTheProduct) {
  at::manual_seed(9);
  const at::Tensor w = at::randn({40, 24}) * 0.3, b = at::randn({40}), x = at::randn({70, 24});
  const at::Tensor y = at::linear(x, w, b);
  struct Case {
    Activation act;
    at::Tensor want;
  };
  for (const Case& c : {Case{Activation::Gelu, at::gelu(y)}, Case{Activation::GeluTanh, at::gelu(y, "tanh")},
                        Case{Activation::Relu, at::relu(y)}, Case{Activation::None, y}}) {
    PackedLinear fp32(w, b, Precision::Fp32, 0, c.act);
    EXPECT_EQ(fp32.activation(), c.act);
    EXPECT_LT(max_abs(fp32.forward(x) - c.want), 1e-5) << static_cast<int>(c.act);
    // int8: the same activation on int8's product (its own rounding, then the activation)
    PackedLinear plain8(w, b, Precision::Int8), fused8(w, b, Precision::Int8, 0, c.act);
    const at::Tensor y8 = plain8.forward(x);
    const at::Tensor want8 = c.act == Activation::Gelu       ? at::gelu(y8)
                             : c.act == Activation::GeluTanh ? at::gelu(y8, "tanh")
                             : c.act == Activation::Relu     ? at::relu(y8)
                                                             : y8;
    EXPECT_LT(max_abs(fused8.forward(x) - want8), 1e-5) << static_cast<int>(c.act);
  }
}

// bf16: both operands rounded to bfloat16 (to nearest even, as torch rounds), the sums in fp32;
// so the answer equals at::linear on the rounded operands up to the order of the fp32 sums.
bool bf16_available() {
  try {
    PackedLinear(at::ones({16, 16}), at::Tensor(), Precision::Bf16);
    return true;
  } catch (const Error& e) {
    // Only a CPU without AVX-512 lacks oneDNN's bf16 products; one with AVX-512 BF16 must have them.
    EXPECT_FALSE(PackedLinear::cpu_has_bf16()) << e.what();
    return false;
  }
}

TEST(PackedLinear, Bf16EqualsTheProductOfTheRoundedOperands) {
  if (!bf16_available()) GTEST_SKIP() << "this CPU has no oneDNN bf16 product (no AVX-512)";
  at::manual_seed(8);
  for (auto [M, K, N] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{{1, 40, 24}, {3, 64, 48}, {70, 96, 30},
                                                                          {300, 32, 16}}) {
    const at::Tensor w = at::randn({N, K}), b = at::randn({N}), x = at::randn({M, K});
    auto round = [](const at::Tensor& t) { return t.to(at::kBFloat16).to(at::kFloat); };
    PackedLinear p(w, b, Precision::Bf16);
    EXPECT_EQ(p.precision(), Precision::Bf16);
    const at::Tensor y = p.forward(x);
    const at::Tensor want = at::linear(round(x).to(at::kDouble), round(w).to(at::kDouble), b.to(at::kDouble)).to(at::kFloat);
    const double scale = max_abs(want);
    EXPECT_LT(max_abs(y - want), 2e-6 * scale * std::sqrt(double(K))) << M << "x" << K << "x" << N;
    // and it is not fp32's product: the rounding shows
    EXPECT_GT(max_abs(y - at::linear(x, w, b)), 1e-4 * scale) << M << "x" << K << "x" << N;
    EXPECT_LT(max_abs(y - at::linear(x, w, b)), 0.03 * scale) << M << "x" << K << "x" << N;
  }
}

TEST(PackedLinear, Bf16RefusesNonFiniteActivations) {
  if (!bf16_available()) GTEST_SKIP() << "this CPU has no oneDNN bf16 product (no AVX-512)";
  const at::Tensor w = at::randn({16, 32}), b = at::randn({16});
  PackedLinear p(w, b, Precision::Bf16);
  for (double bad : {std::nan(""), std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity()}) {
    at::Tensor x = at::randn({5, 32});
    x[4][31] = bad;
    test::expect_error([&] { p.forward(x); }, "NaN or an infinity");
  }
  EXPECT_NO_THROW(p.forward(at::randn({5, 32})));
}

// The outputs the native pass chains its products through: AddToFloat adds the product (bias
// included) into the floats already there, in every precision; Bf16 writes the float product
// rounded to bfloat16 (bf16 and int8); forward_bf16 on rows already rounded equals forward on the float rows. Row
// counts across the piece boundaries.
TEST(PackedLinear, ChainedOutputsEqualTheFloatProductAddedOrRounded) {
  at::manual_seed(11);
  const at::Tensor w = at::randn({40, 48}), b = at::randn({40});
  std::vector<Precision> precisions{Precision::Fp32, Precision::Int8};
  if (bf16_available()) precisions.push_back(Precision::Bf16);
  for (Precision precision : precisions)
    for (int64_t m : {1, 17, 65, 300}) {
      const std::string what = std::string(precision_name(precision)) + ", " + std::to_string(m) + " rows";
      const at::Tensor x = at::randn({m, 48});
      PackedLinear plain(w, b, precision), adding(w, b, precision, 0, Activation::None, LinearOutput::AddToFloat);
      EXPECT_EQ(adding.output(), LinearOutput::AddToFloat);
      const at::Tensor product = plain.forward(x);
      const at::Tensor base = at::randn({m, 40});
      at::Tensor y = base.clone();
      adding.forward(x.data_ptr<float>(), m, y.data_ptr<float>());
      EXPECT_LT(max_abs(y - (base + product)), 1e-5 * (1 + max_abs(product))) << what;
      EXPECT_GT(max_abs(y - product), 0.1) << what;  // the base was added
      if (precision == Precision::Fp32) continue;
      if (precision == Precision::Bf16) {
        const at::Tensor xr = x.to(at::kBFloat16);
        at::Tensor from16 = at::empty({m, 40});
        plain.forward_bf16(reinterpret_cast<const uint16_t*>(xr.data_ptr<at::BFloat16>()), m, from16.data_ptr<float>());
        EXPECT_TRUE(at::equal(from16, product)) << what;
      }
      // Bf16 output (int8: its epilogue's floats rounded).
      PackedLinear rounding(w, b, precision, 0, Activation::Gelu, LinearOutput::Bf16);
      PackedLinear gelu(w, b, precision, 0, Activation::Gelu);
      at::Tensor y16 = at::empty({m, 40}, at::kBFloat16);
      rounding.forward(x.data_ptr<float>(), m, y16.data_ptr<at::BFloat16>());
      const at::Tensor want = gelu.forward(x);
      // oneDNN rounds its float sums to nearest even: the float result rounded, or (where the
      // sum sits at a rounding boundary) its neighbour.
      EXPECT_LT(max_abs(y16.to(at::kFloat) - want.to(at::kBFloat16).to(at::kFloat)), 1e-6 + max_abs(want) / 128) << what;
      EXPECT_GT(max_abs(y16.to(at::kFloat) - want), 0.0) << what;  // rounded
      EXPECT_LT(max_abs(y16.to(at::kFloat) - want), max_abs(want) / 128) << what;
      if (precision == Precision::Int8)  // the same epilogue's floats, rounded by sieve: exactly
        EXPECT_TRUE(at::equal(y16.to(at::kFloat), want.to(at::kBFloat16).to(at::kFloat))) << what;
    }
}

// The int8 product by hand: weights per output channel to [-L, L], rows to uint8 with their own
// scale and zero point (the range widened to include 0), integer sums, then the float epilogue.
at::Tensor naive_int8(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b, int levels) {
  const int64_t M = x.size(0), K = x.size(1), N = w.size(0);
  auto xa = x.accessor<float, 2>();
  auto wa = w.accessor<float, 2>();
  std::vector<std::vector<int>> wq(N, std::vector<int>(K));
  std::vector<float> ws(N);
  for (int64_t n = 0; n < N; ++n) {
    float mx = 0;
    for (int64_t k = 0; k < K; ++k) mx = std::max(mx, std::fabs(wa[n][k]));
    ws[n] = mx > 0 ? mx / static_cast<float>(levels) : 1.0f;
    for (int64_t k = 0; k < K; ++k) {
      long v = std::lrint(wa[n][k] / ws[n]);
      wq[n][k] = static_cast<int>(std::max<long>(-levels, std::min<long>(levels, v)));
    }
  }
  at::Tensor y = at::empty({M, N});
  auto ya = y.accessor<float, 2>();
  for (int64_t m = 0; m < M; ++m) {
    float lo = 0, hi = 0;
    for (int64_t k = 0; k < K; ++k) lo = std::min(lo, xa[m][k]), hi = std::max(hi, xa[m][k]);
    const float s = hi > lo ? (hi - lo) / 255.0f : 1.0f;
    const int z = static_cast<int>(std::max(0L, std::min(255L, std::lrint(-lo / s))));
    std::vector<int> xq(K);
    for (int64_t k = 0; k < K; ++k)
      xq[k] = static_cast<int>(std::max(0.0, std::min(255.0, std::floor(xa[m][k] / s + z + 0.5))));
    for (int64_t n = 0; n < N; ++n) {
      long long acc = 0;
      for (int64_t k = 0; k < K; ++k) acc += static_cast<long long>(xq[k] - z) * wq[n][k];
      ya[m][n] = static_cast<float>(acc) * s * ws[n] + (b.defined() ? b[n].item<float>() : 0.0f);
    }
  }
  return y;
}

TEST(PackedLinear, Int8EqualsANaiveInt8ReferenceAndStaysNearFp32) {
  at::manual_seed(2);
  for (auto [M, K, N] :
       std::vector<std::tuple<int64_t, int64_t, int64_t>>{{1, 40, 24}, {9, 64, 48}, {37, 96, 30}, {290, 24, 12}}) {
    const at::Tensor w = at::randn({N, K}) * 0.1, b = at::randn({N});
    // Skewed rows (as after GELU), one all-zero row and one constant row.
    at::Tensor x = at::randn({M, K}).abs_() - 0.2;
    if (M > 2) {
      x[0].zero_();
      x[1].fill_(0.7);
    }
    PackedLinear p(w, b, Precision::Int8);
    EXPECT_TRUE(p.weight_levels() == 127 || p.weight_levels() == 63);
    EXPECT_EQ(p.weight_levels() == 127, PackedLinear::cpu_has_vnni());
    const at::Tensor y = p.forward(x), want = naive_int8(x, w, b, p.weight_levels());
    const double scale = max_abs(want);
    // The same integers; only the float epilogue's rounding (and a rare tie of the input
    // quantization decided the other way by the order of float operations) may differ.
    EXPECT_LT(max_abs(y - want), 2e-3 * scale) << M << "x" << K << "x" << N;
    EXPECT_LT(max_abs(y - at::linear(x, w, b)), 0.03 * max_abs(at::linear(x, w, b))) << M << "x" << K << "x" << N;
  }
}

// The worst case of the int8 product: every input at the top of its uint8 range (255) and every
// weight at the top of its grid. Without VNNI, oneDNN's u8 x s8 instructions add pairs of products
// in int16, which saturate above 32,767: 2 x 255 x 127 = 64,770 would, 2 x 255 x 63 = 32,130 does
// not. The answer must equal the exact integers on this CPU's own grid; SIEVE_TEST_FORCE_NO_VNNI
// runs the case again in a child limited to AVX2 (ONEDNN_MAX_CPU_ISA), where the grid is 63 and
// 127 is refused, so a CPU with VNNI tests the other path too.
TEST(PackedLinear, Int8WorstCasePairSumsDoNotSaturate) {
  const int64_t K = 256, N = 8;
  const at::Tensor w = at::full({N, K}, 0.1), b = at::zeros({N});
  const at::Tensor x = at::full({3, K}, 0.7);  // one value per row: quantized to 255, zero point 0
  // The child must really run without VNNI, else it tests nothing new.
  if (std::getenv("SIEVE_TEST_CHILD") != nullptr) ASSERT_FALSE(PackedLinear::cpu_has_vnni());
  PackedLinear p(w, b, Precision::Int8);
  const at::Tensor y = p.forward(x), want = naive_int8(x, w, b, p.weight_levels());
  EXPECT_LT(max_abs(y - want), 1e-4 * max_abs(want)) << "levels " << p.weight_levels();
  EXPECT_NEAR(y[0][0].item<double>(), K * 0.07, 1e-3 * K * 0.07);
  // 63 levels are exact on every CPU; 127 only where the CPU has VNNI.
  PackedLinear p63(w, b, Precision::Int8, 63);
  EXPECT_EQ(p63.weight_levels(), 63);
  EXPECT_LT(max_abs(p63.forward(x) - naive_int8(x, w, b, 63)), 1e-4 * max_abs(want));
  if (PackedLinear::cpu_has_vnni()) {
    EXPECT_EQ(p.weight_levels(), 127);
  } else {
    EXPECT_EQ(p.weight_levels(), 63);
    test::expect_error([&] { PackedLinear(w, b, Precision::Int8, 127); }, "need a CPU with VNNI");
  }
  test::expect_error([&] { PackedLinear(w, b, Precision::Int8, 100); }, "127 or 63 levels");
  if (std::getenv("SIEVE_TEST_CHILD") == nullptr && PackedLinear::cpu_has_vnni()) {
    const auto r = test::run_command("SIEVE_TEST_CHILD=1 ONEDNN_MAX_CPU_ISA=AVX2 DNNL_MAX_CPU_ISA=AVX2 " +
                                     std::filesystem::read_symlink("/proc/self/exe").string() + " --gtest_filter='PackedLinear.Int8WorstCase*' 2>&1");
    EXPECT_EQ(r.exit_code, 0) << r.out;
    EXPECT_NE(r.out.find("[  PASSED  ] 1 test"), std::string::npos) << r.out;
  }
}

// A NaN or an infinity in an int8 layer's input reached static_cast<int32_t>(NaN), which is
// undefined (issue 45): refused with a clear error, in any row of a batch; fp32 passes it on.
TEST(PackedLinear, Int8RefusesNonFiniteActivations) {
  at::manual_seed(4);
  const at::Tensor w = at::randn({16, 32}) * 0.1, b = at::randn({16});
  PackedLinear p(w, b, Precision::Int8);
  for (double bad : {std::nan(""), std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity()}) {
    at::Tensor x = at::randn({5, 32});
    x[3][7] = bad;
    test::expect_error([&] { p.forward(x); }, "NaN or an infinity");
  }
  EXPECT_NO_THROW(p.forward(at::randn({5, 32})));
  at::Tensor x = at::randn({2, 32});
  x[0][0] = std::nan("");
  EXPECT_TRUE(at::isnan(PackedLinear(w, b, Precision::Fp32).forward(x)).any().item<bool>());
}

TEST(PackedLinear, PrecisionNames) {
  EXPECT_EQ(precision_from_name("int8"), Precision::Int8);
  EXPECT_EQ(precision_from_name("fp32"), Precision::Fp32);
  EXPECT_EQ(precision_from_name("bf16"), Precision::Bf16);
  EXPECT_EQ(precision_from_name("bfloat16"), Precision::Bf16);
  EXPECT_STREQ(precision_name(Precision::Int8), "int8");
  EXPECT_STREQ(precision_name(Precision::Bf16), "bf16");
  EXPECT_STREQ(precision_name(Precision::Fp32), "fp32");
  test::expect_error([] { precision_from_name("int4"); }, "unknown precision 'int4'");
}

// Keys of an encoder at `precision` against fp32 on real sentences of the real model, or on the
// tiny fixture when the model is not installed: {mean, min} cosine; prints them.
std::pair<double, double> key_cosines_against_fp32(Precision precision, const std::string& expect_grid_prefix) {
  std::string dir;
  try {
    dir = resolve_model_dir("all-MiniLM-L6-v2");
  } catch (const Error&) {
  }
  std::vector<std::string> texts = {"the dog bit the man", "the man bit the dog", "a red car is parked near the river",
                                    "the doctor did not make his rounds", "aspirin prevents heart attacks"};
  if (!dir.empty())
    for (const std::string& q : test::scifact_query_texts(195)) texts.push_back(q);
  if (dir.empty()) {
    dir = test::make_temp_dir("packed_keys") + "/model";
    write_fixture_model(dir, test::tiny_model_options(3));
  }
  EncoderOptions fp32, other;
  other.precision = precision;
  const auto enc = Encoder::load(dir, other);
  EXPECT_EQ(enc->key_grid().rfind(expect_grid_prefix, 0), 0u) << enc->key_grid();
  const Embeddings a = Encoder::load(dir, fp32)->encode(texts, {});
  const Embeddings b = enc->encode(texts, {});
  const size_t d = a.dim;
  double sum = 0, lo = 1;
  for (size_t i = 0; i < texts.size(); ++i) {
    double c = 0;
    for (size_t j = 0; j < d; ++j) c += a.pooled[i * d + j] * b.pooled[i * d + j];
    sum += c;
    lo = std::min(lo, c);
  }
  const double mean = sum / static_cast<double>(texts.size());
  std::printf("%zu texts of %s: key cosine %s vs fp32 mean %.5f, min %.5f\n", texts.size(), dir.c_str(),
              precision_name(precision), mean, lo);
  return {mean, lo};
}

// The bounds for int8: mean cosine >= 0.995, min >= 0.98.
TEST(PackedLinear, Int8EncoderKeysStayWithinTheBoundsOfFp32) {
  const auto [mean, lo] = key_cosines_against_fp32(Precision::Int8, "int8-");
  EXPECT_GE(mean, 0.995);
  EXPECT_GE(lo, 0.98);
  EXPECT_LT(mean, 1.0 - 1e-7);  // int8 really ran: the keys are not fp32's
}

// bf16 keeps 8 bits of mantissa where int8 keeps about 7 of range: tighter bounds.
TEST(PackedLinear, Bf16EncoderKeysStayWithinTheBoundsOfFp32) {
  if (!bf16_available()) GTEST_SKIP() << "this CPU has no oneDNN bf16 product (no AVX-512)";
  const auto [mean, lo] = key_cosines_against_fp32(Precision::Bf16, "bf16");
  EXPECT_GE(mean, 0.999);
  EXPECT_GE(lo, 0.995);
  EXPECT_LT(mean, 1.0 - 1e-7);  // bf16 really ran
}

}  // namespace
}  // namespace sieve
