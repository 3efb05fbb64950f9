// The libtorch BERT encoder against the independent scalar reference (naive_bert.cpp), model
// loading errors, and the tokenize / embed CLI.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <map>
#include <fstream>
#include <nlohmann/json.hpp>

#include "sieve/encoder.h"
#include "sieve/error.h"
#include "sieve/safetensors.h"
#include "support/test_util.h"
#include "unit/model/naive_bert.h"

namespace sieve {
namespace {

using test::make_temp_dir;

FixtureModelOptions small_fixture(Pooling pooling, const std::string& act = "gelu") {
  FixtureModelOptions f;
  f.config.hidden_size = 32;
  f.config.num_hidden_layers = 2;
  f.config.num_attention_heads = 4;
  f.config.intermediate_size = 48;
  f.config.max_position_embeddings = 64;
  f.config.vocab_size = 0;
  f.config.hidden_act = act;
  f.pooling = pooling;
  f.max_seq_length = 64;
  return f;
}

const std::vector<std::string> kTexts = {
    "the dog bit the man",
    "the man bit the dog",
    "",
    "a red car and a blue house near the river, before the sun rose over the old city",
    "hello world",
    "cannot",
    "the children saw five birds above the tree and three cats below the table",
};

// Encodes kTexts in small batches (so padding occurs) and compares every token state and key
// with the scalar reference run on each text alone.
void expect_matches_reference(const std::string& dir, Pooling pooling, size_t batch_size) {
  EncoderOptions eo;
  eo.threads = 1;
  auto enc = Encoder::load(dir, eo);
  ASSERT_EQ(enc->pooling(), pooling);
  EncodeCall call;
  call.batch_size = batch_size;
  call.token_states = true;
  Embeddings e = enc->encode(kTexts, call);
  ASSERT_EQ(e.pooled.size(), kTexts.size() * e.dim);
  test::NaiveBert ref(dir);
  ASSERT_EQ(size_t(ref.hidden()), e.dim);
  double max_err = 0;
  for (size_t i = 0; i < kTexts.size(); ++i) {
    const Encoding& enc_i = e.encodings[i];
    std::vector<int> ids(enc_i.ids.begin(), enc_i.ids.end()), types(enc_i.type_ids.begin(), enc_i.type_ids.end());
    auto states = ref.forward(ids, types);
    ASSERT_EQ(e.tokens[i].length, states.size());
    for (size_t t = 0; t < states.size(); ++t)
      for (size_t h = 0; h < e.dim; ++h)
        max_err = std::max(max_err, std::abs(states[t][h] - e.tokens[i].values[t * e.dim + h]));
    auto key = test::NaiveBert::pool(states, pooling_name(pooling));
    for (size_t h = 0; h < e.dim; ++h) max_err = std::max(max_err, std::abs(key[h] - e.pooled[i * e.dim + h]));
  }
  EXPECT_LT(max_err, 1e-4) << "libtorch encoder deviates from the scalar reference";
}

class EncoderVsReference : public ::testing::TestWithParam<std::tuple<Pooling, std::string, bool, bool>> {};

TEST_P(EncoderVsReference, TokenStatesAndKeysMatch) {
  auto [pooling, act, prefix, fp16] = GetParam();
  auto f = small_fixture(pooling, act);
  f.bert_prefix = prefix;
  f.fp16 = fp16;
  f.seed = 7 + static_cast<int>(pooling);
  std::string dir = make_temp_dir("enc");
  write_fixture_model(dir, f);
  expect_matches_reference(dir, pooling, 3);
}

std::string param_name(const ::testing::TestParamInfo<EncoderVsReference::ParamType>& info) {
  auto [pooling, act, prefix, fp16] = info.param;
  return std::string(pooling_name(pooling)) + "_" + act + (prefix ? "_bertprefix" : "") + (fp16 ? "_fp16" : "");
}

INSTANTIATE_TEST_SUITE_P(
    AllPoolings, EncoderVsReference,
    ::testing::Values(std::make_tuple(Pooling::Mean, std::string("gelu"), false, false),
                      std::make_tuple(Pooling::Cls, std::string("gelu"), false, false),
                      std::make_tuple(Pooling::LastToken, std::string("gelu"), false, false),
                      std::make_tuple(Pooling::Mean, std::string("gelu_new"), true, false),
                      std::make_tuple(Pooling::Cls, std::string("relu"), false, true)),
    param_name);

TEST(Encoder, BatchSizeDoesNotChangeResults) {
  std::string dir = make_temp_dir("enc_bs");
  write_fixture_model(dir, small_fixture(Pooling::Mean));
  auto enc = Encoder::load(dir);
  EncodeCall one;
  one.batch_size = 1;
  EncodeCall all;
  all.batch_size = 64;
  Embeddings a = enc->encode(kTexts, one), b = enc->encode(kTexts, all);
  ASSERT_EQ(a.pooled.size(), b.pooled.size());
  for (size_t i = 0; i < a.pooled.size(); ++i) EXPECT_NEAR(a.pooled[i], b.pooled[i], 1e-5);
}

TEST(Encoder, KeysAreUnitVectors) {
  std::string dir = make_temp_dir("enc_unit");
  write_fixture_model(dir, small_fixture(Pooling::Mean));
  auto enc = Encoder::load(dir);
  Embeddings e = enc->encode(kTexts);
  for (size_t i = 0; i < kTexts.size(); ++i) {
    double n = 0;
    for (size_t h = 0; h < e.dim; ++h) n += double(e.pooled[i * e.dim + h]) * e.pooled[i * e.dim + h];
    EXPECT_NEAR(n, 1.0, 1e-5);
  }
}

TEST(Encoder, PoolingOverrideAndLongInputTruncates) {
  std::string dir = make_temp_dir("enc_trunc");
  write_fixture_model(dir, small_fixture(Pooling::Mean));
  EncoderOptions eo;
  eo.pooling = Pooling::Cls;
  eo.max_length = 10;
  auto enc = Encoder::load(dir, eo);
  EXPECT_EQ(enc->pooling(), Pooling::Cls);
  std::string long_text;
  for (int i = 0; i < 200; ++i) long_text += "the dog ";
  EncodeCall call;
  call.token_states = true;
  Embeddings e = enc->encode({long_text, "the dog"}, call);
  EXPECT_EQ(e.truncated, 1u);
  EXPECT_EQ(e.tokens[0].length, 10u);
  EXPECT_EQ(e.encodings[0].ids.back(), enc->tokenizer().special_tokens().sep);
  EXPECT_EQ(e.tokens[1].length, 4u);
}

// The thread count is process-wide: a load with default options keeps what the process chose
// (Python's set_threads(1) then Index.open() returned to all cores); a load that asks sets it.
// The chosen count is one more than the cores, so that it differs from the all-cores default.
TEST(Encoder, DefaultLoadKeepsTheProcessThreadCount) {
  std::string dir = make_temp_dir("enc_threads");
  write_fixture_model(dir, small_fixture(Pooling::Mean));
  const int chosen = static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN)) + 1;
  set_compute_threads(chosen);
  auto enc = Encoder::load(dir);
  EXPECT_EQ(compute_threads(), chosen);
  EXPECT_EQ(enc->encode({"the dog"}).pooled.size(), enc->dim());
  EncoderOptions asked;
  asked.threads = 1;
  Encoder::load(dir, asked);
  EXPECT_EQ(compute_threads(), 1);
  set_compute_threads(0);
}

TEST(Encoder, EmptyInputListGivesEmptyOutput) {
  std::string dir = make_temp_dir("enc_empty");
  write_fixture_model(dir, small_fixture(Pooling::Mean));
  auto enc = Encoder::load(dir);
  Embeddings e = enc->encode({});
  EXPECT_TRUE(e.pooled.empty());
}

// libsentencepiece bundles protobuf-lite; libtorch links libprotobuf. In one process they crash
// unless the SentencePiece module is isolated (src/text/spm_module.cpp). This binary links libtorch.
TEST(Encoder, SentencePieceWorksInALibtorchProcess) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer refuses RTLD_DEEPBIND, which this isolation needs; "
                  "SentencePiece is tested without libtorch in test_text";
#endif
  std::string dir = make_temp_dir("spm_torch");
  {
    std::ofstream corpus(dir + "/corpus.txt");
    for (int i = 0; i < 200; ++i) corpus << kTexts[i % kTexts.size()] << " " << i << "\n";
  }
  train_sentencepiece("--input=" + dir + "/corpus.txt --model_prefix=" + dir + "/spiece --vocab_size=80 "
                      "--hard_vocab_limit=false --control_symbols=[CLS],[SEP],[PAD],[MASK] --minloglevel=2");
  auto tok = make_sentencepiece_tokenizer(dir + "/spiece.model", 64);
  Encoding e = tok->encode("the dog bit the man");
  EXPECT_EQ(e.ids.front(), tok->special_tokens().cls);
  EXPECT_EQ(e.ids.back(), tok->special_tokens().sep);
  EXPECT_GT(e.ids.size(), 3u);
}

// --- loading errors -------------------------------------------------------------------------

using test::error_of;

TEST(EncoderLoad, MissingDirectoryAndFiles) {
  EXPECT_NE(error_of([] { Encoder::load("/nonexistent/model"); }).find("not found"), std::string::npos);
  std::string dir = make_temp_dir("enc_missing");
  EXPECT_NE(error_of([&] { Encoder::load(dir); }).find("config.json"), std::string::npos);
  write_fixture_model(dir, small_fixture(Pooling::Mean));
  std::remove((dir + "/model.safetensors").c_str());
  EXPECT_NE(error_of([&] { Encoder::load(dir); }).find("model.safetensors"), std::string::npos);
}

// Rewrites a fixture's weights with one tensor dropped, reshaped or retyped.
void rewrite_weights(const std::string& dir, const std::string& victim, const std::string& how) {
  auto f = SafetensorsFile::open(dir + "/model.safetensors");
  std::vector<std::vector<uint8_t>> keep;
  std::vector<TensorToWrite> out;
  for (const auto& name : f->names()) {
    const TensorView& t = f->get(name);
    TensorToWrite w{name, t.dtype, t.shape, t.data, t.nbytes};
    if (name == victim) {
      if (how == "drop") continue;
      if (how == "reshape") w.shape = {t.shape[0] * (t.shape.size() > 1 ? t.shape[1] : 1)};
      if (how == "int") w.dtype = DType::I32;
    }
    out.push_back(w);
  }
  std::string tmp = dir + "/new.safetensors";
  write_safetensors(tmp, out);
  f.reset();
  std::rename(tmp.c_str(), (dir + "/model.safetensors").c_str());
}

TEST(EncoderLoad, MissingMisshapedOrMistypedTensorIsNamed) {
  const std::string victim = "encoder.layer.1.attention.self.key.weight";
  for (const std::string how : {"drop", "reshape", "int"}) {
    std::string dir = make_temp_dir("enc_bad");
    write_fixture_model(dir, small_fixture(Pooling::Mean));
    rewrite_weights(dir, victim, how);
    std::string msg = error_of([&] { Encoder::load(dir); });
    EXPECT_NE(msg.find(victim), std::string::npos) << how << ": " << msg;
  }
}

TEST(EncoderLoad, UnknownArchitectureAndBadConfig) {
  std::string dir = make_temp_dir("enc_arch");
  write_fixture_model(dir, small_fixture(Pooling::Mean));
  std::ofstream(dir + "/config.json") << R"({"model_type": "gpt2", "hidden_size": 32})";
  EXPECT_NE(error_of([&] { Encoder::load(dir); }).find("gpt2"), std::string::npos);
  std::ofstream(dir + "/config.json") << "{not json";
  EXPECT_NE(error_of([&] { Encoder::load(dir); }).find("JSON"), std::string::npos);
  std::ofstream(dir + "/config.json") << R"({"model_type": "bert", "hidden_size": 30, "num_attention_heads": 4})";
  EXPECT_NE(error_of([&] { Encoder::load(dir); }).find("multiple"), std::string::npos);
}

TEST(EncoderLoad, ConfigThatDisagreesWithWeights) {
  std::string dir = make_temp_dir("enc_cfg");
  write_fixture_model(dir, small_fixture(Pooling::Mean));
  auto j = nlohmann::json::parse(std::ifstream(dir + "/config.json"));
  j["intermediate_size"] = 64;
  std::ofstream(dir + "/config.json") << j.dump();
  EXPECT_NE(error_of([&] { Encoder::load(dir); }).find("intermediate.dense.weight"), std::string::npos);
}

TEST(EncoderLoad, UnknownDevice) {
  std::string dir = make_temp_dir("enc_dev");
  write_fixture_model(dir, small_fixture(Pooling::Mean));
  EncoderOptions eo;
  eo.device = "tpu";
  EXPECT_NE(error_of([&] { Encoder::load(dir, eo); }).find("tpu"), std::string::npos);
}

// --- CLI ------------------------------------------------------------------------------------

TEST(Cli, TokenizeAndEmbedWriteOneJsonLinePerTextInOrder) {
  std::string dir = make_temp_dir("cli");
  write_fixture_model(dir, small_fixture(Pooling::Mean));
  std::string cli = test::cli_path();
  auto r = test::run_command(cli + " tokenize --model " + dir + " 'hello world' 'the dog' 2>/dev/null");
  ASSERT_EQ(r.exit_code, 0);
  std::istringstream lines(r.out);
  std::string l1, l2;
  std::getline(lines, l1);
  std::getline(lines, l2);
  auto j1 = nlohmann::json::parse(l1), j2 = nlohmann::json::parse(l2);
  EXPECT_EQ(j1["tokens"], nlohmann::json({"[CLS]", "hello", "world", "[SEP]"}));
  EXPECT_EQ(j1["offsets"][1], nlohmann::json({0, 5}));
  EXPECT_EQ(j2["tokens"], nlohmann::json({"[CLS]", "the", "dog", "[SEP]"}));

  // embed from stdin, with token states; compare to the library.
  auto e = test::run_command("printf 'the dog bit the man\\nhello world\\n' | " + cli + " embed --tokens --model " + dir);
  ASSERT_EQ(e.exit_code, 0);
  auto enc = Encoder::load(dir);
  EncodeCall call;
  call.token_states = true;
  Embeddings ref = enc->encode({"the dog bit the man", "hello world"}, call);
  std::istringstream el(e.out);
  for (size_t i = 0; i < 2; ++i) {
    std::string line;
    ASSERT_TRUE(std::getline(el, line));
    auto j = nlohmann::json::parse(line);
    ASSERT_EQ(j["embedding"].size(), ref.dim);
    for (size_t h = 0; h < ref.dim; ++h) EXPECT_NEAR(j["embedding"][h].get<double>(), ref.pooled[i * ref.dim + h], 1e-6);
    EXPECT_EQ(j["tokens"].size(), ref.tokens[i].length);
  }
}

TEST(Cli, EmbedPrecisionInt8IsTheLibrarysInt8Encoder) {
  std::string dir = make_temp_dir("cli_int8");
  write_fixture_model(dir, small_fixture(Pooling::Mean));
  auto e = test::run_command(test::cli_path() + " embed --precision int8 --model " + dir + " 'the dog bit the man'");
  ASSERT_EQ(e.exit_code, 0);
  EncoderOptions eo;
  eo.precision = Precision::Int8;
  const Embeddings int8 = Encoder::load(dir, eo)->encode({"the dog bit the man"}, {});
  const Embeddings fp32 = Encoder::load(dir)->encode({"the dog bit the man"}, {});
  auto j = nlohmann::json::parse(e.out);
  ASSERT_EQ(j["embedding"].size(), int8.dim);
  double diff_fp32 = 0;
  for (size_t h = 0; h < int8.dim; ++h) {
    EXPECT_NEAR(j["embedding"][h].get<double>(), int8.pooled[h], 1e-6);
    diff_fp32 = std::max(diff_fp32, static_cast<double>(std::fabs(int8.pooled[h] - fp32.pooled[h])));
  }
  EXPECT_GT(diff_fp32, 1e-6);  // it is not the fp32 key
  auto bad = test::run_command(test::cli_path() + " embed --precision int4 --model " + dir + " x 2>&1");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.out.find("int4"), std::string::npos);
}

TEST(Cli, EngineNativeReachesTheEncoder) {
  std::string dir = make_temp_dir("cli_native");
  write_fixture_model(dir, small_fixture(Pooling::Mean));
  // The two engines' keys differ in their last bits; each --engine prints its own engine's, nearer
  // it than the other's (with the flag ignored, one of the two would print the other's).
  std::map<Engine, std::vector<float>> lib;
  for (Engine engine : {Engine::Native, Engine::Torch}) {
    EncoderOptions eo;
    eo.engine = engine;
    lib[engine] = Encoder::load(dir, eo)->encode({"the dog bit the man"}, {}).pooled;
  }
  double apart = 0;
  for (size_t h = 0; h < lib[Engine::Native].size(); ++h)
    apart = std::max(apart, std::fabs(double(lib[Engine::Native][h]) - lib[Engine::Torch][h]));
  ASSERT_GT(apart, 2e-8) << "the engines agree to the bit here: the fixture cannot tell them apart";
  for (Engine engine : {Engine::Native, Engine::Torch}) {
    const Engine other = engine == Engine::Native ? Engine::Torch : Engine::Native;
    auto e = test::run_command(test::cli_path() + " embed --engine " + engine_name(engine) + " --model " + dir +
                               " 'the dog bit the man'");
    ASSERT_EQ(e.exit_code, 0) << e.out;
    auto j = nlohmann::json::parse(e.out);
    ASSERT_EQ(j["embedding"].size(), lib[engine].size());
    double own = 0, others = 0;
    for (size_t h = 0; h < lib[engine].size(); ++h) {
      const double printed = j["embedding"][h].get<double>();
      own = std::max(own, std::fabs(printed - lib[engine][h]));
      others = std::max(others, std::fabs(printed - lib[other][h]));
    }
    EXPECT_LT(own, others) << engine_name(engine) << ": the printed key is not its engine's";
    EXPECT_LT(own, 1e-6);
  }
  // A family the native pass does not run is refused through the flag, naming the engine.
  std::string modern = make_temp_dir("cli_native_modernbert");
  FixtureModelOptions f = small_fixture(Pooling::Mean);
  f.config.model_type = "modernbert";
  f.config.layer_norm_eps = 1e-5;
  write_fixture_model(modern, f);
  auto refused = test::run_command(test::cli_path() + " embed --engine native --model " + modern + " x 2>&1");
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_NE(refused.out.find("native engine runs the BERT family"), std::string::npos) << refused.out;
  auto bad = test::run_command(test::cli_path() + " embed --engine onnx --model " + dir + " x 2>&1");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.out.find("onnx"), std::string::npos);
}

TEST(Cli, EmptyInputWritesNothingAndLongInputWarnsOnce) {
  std::string dir = make_temp_dir("cli_empty");
  write_fixture_model(dir, small_fixture(Pooling::Mean));
  std::string cli = test::cli_path();
  auto r = test::run_command("printf '' | " + cli + " embed --model " + dir + " 2>/dev/null");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "");
  std::string long_text;
  for (int i = 0; i < 100; ++i) long_text += "the dog ";
  auto w = test::run_command(cli + " embed --max-length 8 --model " + dir + " '" + long_text + "' '" + long_text +
                             "' 2>&1 >/dev/null | grep -c truncated");
  EXPECT_EQ(w.out, "1\n") << "the truncation warning must appear exactly once";
}

TEST(Cli, ExitCodes) {
  std::string cli = test::cli_path();
  EXPECT_EQ(test::run_command(cli + " embed --no-such-flag x 2>/dev/null").exit_code, 2);  // usage error
  EXPECT_EQ(test::run_command(cli + " no-such-command 2>/dev/null").exit_code, 2);
  EXPECT_EQ(test::run_command(cli + " embed --model /nonexistent x 2>/dev/null").exit_code, 1);
  EXPECT_EQ(test::run_command(cli + " embed --help >/dev/null 2>&1").exit_code, 0);
}

}  // namespace
}  // namespace sieve
