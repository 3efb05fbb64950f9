// The encoder families beyond BERT (RoBERTa, XLM-R): the libtorch path against the independent
// scalar reference (naive_bert.cpp), fixture layout, config parsing, the CLI's make-fixture, and
// a few training steps.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "sieve/encoder.h"
#include "sieve/error.h"
#include "sieve/safetensors.h"
#include "sieve/train.h"
#include "support/test_util.h"
#include "unit/model/naive_bert.h"
#include "model/modernbert.h"
#include "unit/model/naive_modernbert.h"

namespace sieve {
namespace {

using test::make_temp_dir;

FixtureModelOptions family_fixture(const std::string& arch, Pooling pooling) {
  FixtureModelOptions f;
  f.config.model_type = arch;
  f.config.hidden_size = 32;
  f.config.num_hidden_layers = 2;
  f.config.num_attention_heads = 4;
  f.config.intermediate_size = 48;
  f.config.max_position_embeddings = 64;
  f.config.vocab_size = 0;
  f.pooling = pooling;
  f.max_seq_length = 64;
  if (arch == "modernbert") {
    // Three layers: 0 and 2 global, 1 local with a window of |i - j| <= 2, shorter than most texts.
    f.config.num_hidden_layers = 3;
    f.config.global_attn_every_n_layers = 2;
    f.config.local_attention = 4;
    f.config.global_rope_theta = 1000.0;
    f.config.local_rope_theta = 50.0;
    f.config.layer_norm_eps = 1e-5;
    f.config.norm_bias = f.config.attention_bias = f.config.mlp_bias = false;
  }
  return f;
}

const std::vector<std::string> kTexts = {
    "the dog bit the man",
    "the man bit the dog",
    "",
    "a red car and a blue house near the river, before the sun rose over the old city",
    "hello world",
    "cannot",
    "The children saw 5 birds above the tree, and three cats below the table!",
    "caf\xC3\xA9 na\xC3\xAFve",
};

// Encodes kTexts in batches of 3 (so padding occurs) and returns the largest difference of any
// token state or key from the scalar reference run on each text alone.
double max_diff_from_reference(const std::string& dir, Pooling pooling) {
  EncoderOptions eo;
  eo.threads = 1;
  auto enc = Encoder::load(dir, eo);
  EXPECT_EQ(enc->pooling(), pooling);
  EncodeCall call;
  call.batch_size = 3;
  call.token_states = true;
  Embeddings e = enc->encode(kTexts, call);
  const bool modern = enc->info().config.model_type == "modernbert";
  std::unique_ptr<test::NaiveBert> bert;
  std::unique_ptr<test::NaiveModernBert> modernbert;
  if (modern)
    modernbert = std::make_unique<test::NaiveModernBert>(dir);
  else
    bert = std::make_unique<test::NaiveBert>(dir);
  EXPECT_EQ(size_t(modern ? modernbert->hidden() : bert->hidden()), e.dim);
  double max_err = 0;
  for (size_t i = 0; i < kTexts.size(); ++i) {
    const Encoding& enc_i = e.encodings[i];
    std::vector<int> ids(enc_i.ids.begin(), enc_i.ids.end()), types(enc_i.type_ids.begin(), enc_i.type_ids.end());
    auto states = modern ? modernbert->forward(ids) : bert->forward(ids, types);
    EXPECT_EQ(e.tokens[i].length, states.size());
    for (size_t t = 0; t < states.size(); ++t)
      for (size_t h = 0; h < e.dim; ++h)
        max_err = std::max(max_err, std::abs(states[t][h] - e.tokens[i].values[t * e.dim + h]));
    auto key = test::NaiveBert::pool(states, pooling_name(pooling));
    for (size_t h = 0; h < e.dim; ++h) max_err = std::max(max_err, std::abs(key[h] - e.pooled[i * e.dim + h]));
  }
  return max_err;
}

struct FamilyCase {
  std::string arch;
  Pooling pooling;
  bool prefix;
  bool fp16;
  int biases = 0;  ///< modernbert: bit 0 norm_bias, bit 1 attention_bias, bit 2 mlp_bias
};

void PrintTo(const FamilyCase& c, std::ostream* os) {
  *os << c.arch << " " << pooling_name(c.pooling) << (c.prefix ? " prefixed" : "") << (c.fp16 ? " fp16" : "")
      << " biases=" << c.biases;
}

class FamilyVsReference : public ::testing::TestWithParam<FamilyCase> {};

TEST_P(FamilyVsReference, TokenStatesAndKeysMatch) {
  const FamilyCase& c = GetParam();
  auto f = family_fixture(c.arch, c.pooling);
  f.bert_prefix = c.prefix;
  f.fp16 = c.fp16;
  f.seed = 17 + static_cast<int>(c.pooling) + c.biases;
  f.config.norm_bias = c.biases & 1;
  f.config.attention_bias = c.biases & 2;
  f.config.mlp_bias = c.biases & 4;
  std::string dir = make_temp_dir("family");
  write_fixture_model(dir, f);
  double err = max_diff_from_reference(dir, c.pooling);
  std::printf("%s %s%s%s biases=%d: max |libtorch - reference| = %.3g\n", c.arch.c_str(), pooling_name(c.pooling),
              c.prefix ? " prefixed" : "", c.fp16 ? " fp16" : "", c.biases, err);
  EXPECT_LT(err, 1e-4) << "libtorch encoder deviates from the scalar reference";
}

std::string family_name(const ::testing::TestParamInfo<FamilyCase>& info) {
  std::string a = info.param.arch;
  for (char& ch : a)
    if (ch == '-') ch = '_';
  return a + "_" + pooling_name(info.param.pooling) + (info.param.prefix ? "_prefix" : "") +
         (info.param.fp16 ? "_fp16" : "") + (info.param.biases ? "_bias" + std::to_string(info.param.biases) : "");
}

INSTANTIATE_TEST_SUITE_P(RobertaFamily, FamilyVsReference,
                         ::testing::Values(FamilyCase{"roberta", Pooling::Mean, false, false},
                                           FamilyCase{"roberta", Pooling::Cls, true, false},
                                           FamilyCase{"roberta", Pooling::LastToken, false, false},
                                           FamilyCase{"xlm-roberta", Pooling::Mean, true, false},
                                           FamilyCase{"xlm-roberta", Pooling::Cls, false, true}),
                         family_name);

INSTANTIATE_TEST_SUITE_P(Mpnet, FamilyVsReference,
                         ::testing::Values(FamilyCase{"mpnet", Pooling::Mean, false, false},
                                           FamilyCase{"mpnet", Pooling::Cls, true, false},
                                           FamilyCase{"mpnet", Pooling::LastToken, false, true}),
                         family_name);

INSTANTIATE_TEST_SUITE_P(ModernBert, FamilyVsReference,
                         ::testing::Values(FamilyCase{"modernbert", Pooling::Mean, false, false, 0},
                                           FamilyCase{"modernbert", Pooling::Cls, true, false, 7},
                                           FamilyCase{"modernbert", Pooling::LastToken, false, false, 1},
                                           FamilyCase{"modernbert", Pooling::Mean, true, false, 6},
                                           FamilyCase{"modernbert", Pooling::Cls, false, true, 2}),
                         family_name);

// The unpadded path attends in blocks of queries; every block size (a block of one query, blocks
// that end inside the local window, one block for the whole text) must give the reference.
TEST(ModernBertBlocks, AnyQueryBlockGivesTheReference) {
  auto f = family_fixture("modernbert", Pooling::Mean);
  f.seed = 23;
  std::string dir = make_temp_dir("family_blocks");
  write_fixture_model(dir, f);
  const int64_t saved = modernbert_attention_block();
  for (int64_t block : {1, 3, 5, 256}) {
    set_modernbert_attention_block(block);
    double err = max_diff_from_reference(dir, Pooling::Mean);
    EXPECT_LT(err, 1e-4) << "block " << block;
  }
  set_modernbert_attention_block(saved);
  EXPECT_THROW(set_modernbert_attention_block(0), Error);
}

// A text far longer than the local window and than one block: 700 tokens, window |i - j| <= 8,
// blocks of 64 queries, global and local layers mixed.
TEST(ModernBertBlocks, LongTextMatchesTheReference) {
  auto f = family_fixture("modernbert", Pooling::Mean);
  f.config.max_position_embeddings = 1024;
  f.max_seq_length = 1024;
  f.config.local_attention = 16;
  f.seed = 29;
  std::string dir = make_temp_dir("family_long");
  write_fixture_model(dir, f);
  std::string text;
  for (int i = 0; i < 300; ++i) text += (i % 7 == 0 ? "the dog bit the man " : "a ") + std::to_string(i) + " ";
  EncoderOptions eo;
  eo.threads = 1;
  auto enc = Encoder::load(dir, eo);
  const int64_t saved = modernbert_attention_block();
  set_modernbert_attention_block(64);
  EncodeCall call;
  call.token_states = true;
  Embeddings e = enc->encode({text, "short text"}, call);
  set_modernbert_attention_block(saved);
  ASSERT_GT(e.tokens[0].length, 600u);
  test::NaiveModernBert ref(dir);
  for (size_t i = 0; i < 2; ++i) {
    const auto& ids32 = e.encodings[i].ids;
    auto states = ref.forward(std::vector<int>(ids32.begin(), ids32.end()));
    ASSERT_EQ(states.size(), e.tokens[i].length);
    double err = 0;
    for (size_t t = 0; t < states.size(); ++t)
      for (size_t h = 0; h < e.dim; ++h) err = std::max(err, std::abs(states[t][h] - e.tokens[i].values[t * e.dim + h]));
    EXPECT_LT(err, 1e-4) << "text " << i;
  }
}

// `sieve embed --ids`: ids used exactly as given, for every family, against the scalar reference
// run on the same ids (ids that the tokenizer would not produce: no [CLS], a repeated id). The
// model folders have no tokenizer files: the ids need none.
TEST(EmbedIds, EveryFamilyMatchesTheReferenceOnTheGivenIds) {
  for (const char* arch : {"bert", "roberta", "mpnet", "modernbert"}) {
    auto f = family_fixture(arch, Pooling::Mean);
    f.seed = 31;
    std::string dir = make_temp_dir(std::string("embed_ids_") + arch);
    write_fixture_model(dir, f);
    for (const char* file : {"vocab.txt", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"})
      std::filesystem::remove(dir + "/" + file);
    EXPECT_NE(test::error_of([&] { Encoder::load(dir); }).find("no usable tokenizer"), std::string::npos) << arch;
    EncoderOptions ids_only;
    ids_only.load_tokenizer = false;
    auto enc = Encoder::load(dir, ids_only);
    EXPECT_NE(test::error_of([&] { enc->encode({"a text"}); }).find("without a tokenizer"), std::string::npos) << arch;
    EXPECT_NE(test::error_of([&] { enc->tokenizer(); }).find("without a tokenizer"), std::string::npos) << arch;
    const std::vector<std::vector<int>> inputs = {{5, 9, 9, 12}, {7}, {3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13}};
    {
      std::ofstream in(dir + "/ids.jsonl");
      for (const auto& ids : inputs) {
        in << "{\"ids\": [";
        for (size_t i = 0; i < ids.size(); ++i) in << (i ? "," : "") << ids[i];
        in << "]}\n\n";
      }
    }
    auto r = test::run_command(test::cli_path() + " embed --ids -m " + dir + " --batch-size 2 --input " + dir +
                               "/ids.jsonl 2>/dev/null");
    ASSERT_EQ(r.exit_code, 0) << arch;
    std::istringstream lines(r.out);
    std::string line;
    size_t n = 0;
    const bool modern = std::string(arch) == "modernbert";
    for (; std::getline(lines, line); ++n) {
      ASSERT_LT(n, inputs.size());
      auto got = nlohmann::json::parse(line)["embedding"].get<std::vector<double>>();
      std::vector<std::vector<double>> states =
          modern ? test::NaiveModernBert(dir).forward(inputs[n])
                 : test::NaiveBert(dir).forward(inputs[n], std::vector<int>(inputs[n].size(), 0));
      auto key = test::NaiveBert::pool(states, "mean");
      ASSERT_EQ(got.size(), key.size());
      for (size_t h = 0; h < key.size(); ++h) EXPECT_NEAR(got[h], key[h], 1e-5) << arch << " input " << n;
    }
    EXPECT_EQ(n, inputs.size()) << arch;
  }
  std::string dir = make_temp_dir("embed_ids_bad");
  write_fixture_model(dir, family_fixture("bert", Pooling::Mean));
  for (auto [input, message] : std::vector<std::pair<std::string, std::string>>{
           {"{\"ids\": [1, 999999]}", "outside the vocabulary"},
           {"{\"ids\": []}", "no token ids"},
           {"{\"ids\": [1, \"a\"]}", "must be integers"},
           {"[1, 2]", "expected {\"ids\""},
           {"{\"ids\": [1,", "not JSON"}}) {
    {
      std::ofstream(dir + "/bad.jsonl") << "{\"ids\": [1, 2]}\n" << input << "\n";
    }
    auto r = test::run_command(test::cli_path() + " embed --ids -m " + dir + " --input " + dir + "/bad.jsonl 2>&1");
    EXPECT_EQ(r.exit_code, 1) << input;
    EXPECT_NE(r.out.find(message), std::string::npos) << r.out;
    EXPECT_TRUE(r.out.find("line 2") != std::string::npos || r.out.find("input 2") != std::string::npos) << r.out;
  }
  std::string long_ids = "{\"ids\": [1";
  for (int i = 0; i < 70; ++i) long_ids += ",2";
  std::ofstream(dir + "/long.jsonl") << long_ids << "]}\n";
  auto r = test::run_command(test::cli_path() + " embed --ids -m " + dir + " --input " + dir + "/long.jsonl 2>&1");
  EXPECT_NE(r.out.find("more than the model's 64"), std::string::npos) << r.out;
}

TEST(RobertaFixture, HuggingFaceLayoutAndTokenizer) {
  std::string dir = make_temp_dir("family_layout");
  auto f = family_fixture("roberta", Pooling::Mean);
  f.bert_prefix = true;
  write_fixture_model(dir, f);
  for (const char* name : {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json",
                           "special_tokens_map.json", "modules.json", "1_Pooling/config.json",
                           "sentence_bert_config.json", "config_sentence_transformers.json"})
    EXPECT_TRUE(std::filesystem::exists(dir + "/" + name)) << name;
  EXPECT_FALSE(std::filesystem::exists(dir + "/vocab.txt"));
  auto cfg = nlohmann::json::parse(std::ifstream(dir + "/config.json"));
  EXPECT_EQ(cfg["model_type"], "roberta");
  EXPECT_EQ(cfg["architectures"][0], "RobertaModel");
  EXPECT_EQ(cfg["pad_token_id"], 1);
  EXPECT_EQ(cfg["type_vocab_size"], 1);
  EXPECT_EQ(cfg["max_position_embeddings"], 66);  // 64 positions after padding_idx + 1 rows
  auto w = SafetensorsFile::open(dir + "/model.safetensors");
  EXPECT_TRUE(w->contains("roberta.embeddings.position_embeddings.weight"));
  EXPECT_TRUE(w->contains("roberta.encoder.layer.1.output.LayerNorm.bias"));

  auto enc = Encoder::load(dir);
  EXPECT_EQ(enc->max_length(), 64u);
  const Tokenizer& tok = enc->tokenizer();
  EXPECT_EQ(tok.special_tokens().pad, 1);
  Encoding e = tok.encode("the dog bit the man", {});
  ASSERT_GE(e.ids.size(), 3u);  // <s> the Ġdog Ġbit Ġthe Ġman </s>, as the merges allow
  EXPECT_LE(e.ids.size(), 7u);
  EXPECT_EQ(e.ids.front(), 0);
  EXPECT_EQ(e.ids.back(), 2);
  // A text as long as the position table allows runs (positions 2..65 of 66 rows).
  std::string long_text;
  for (int i = 0; i < 100; ++i) long_text += " the dog";
  Embeddings emb = enc->encode({long_text, "the"});
  EXPECT_EQ(emb.truncated, 1u);
}

TEST(RobertaConfig, DefaultsAndSupportedList) {
  BertConfig c = parse_bert_config(R"({"model_type": "xlm-roberta", "hidden_size": 32, "num_attention_heads": 4,
                                       "max_position_embeddings": 514})");
  EXPECT_EQ(c.pad_token_id, 1);
  EXPECT_EQ(c.type_vocab_size, 1);
  EXPECT_TRUE(uses_roberta_positions(c));
  EXPECT_EQ(max_sequence_length(c), 512);
  BertConfig d = parse_bert_config(bert_config_to_json(c));
  EXPECT_EQ(d.model_type, "xlm-roberta");
  EXPECT_EQ(d.pad_token_id, 1);
  std::string msg;
  try {
    parse_bert_config(R"({"model_type": "t5"})");
  } catch (const Error& e) {
    msg = e.what();
  }
  EXPECT_NE(msg.find("t5"), std::string::npos);
  EXPECT_NE(msg.find("bert, roberta, xlm-roberta"), std::string::npos) << msg;
  EXPECT_THROW(parse_bert_config(R"({"model_type": "roberta", "max_position_embeddings": 2})"), Error);
}

TEST(RobertaLoad, MissingTensorNamesTheRobertaPrefix) {
  std::string dir = make_temp_dir("family_missing");
  write_fixture_model(dir, family_fixture("roberta", Pooling::Mean));
  auto cfg = nlohmann::json::parse(std::ifstream(dir + "/config.json"));
  cfg["num_hidden_layers"] = 3;
  std::ofstream(dir + "/config.json") << cfg.dump();
  std::string msg;
  try {
    Encoder::load(dir);
  } catch (const Error& e) {
    msg = e.what();
  }
  EXPECT_NE(msg.find("roberta.encoder.layer.2"), std::string::npos) << msg;
}

TEST(RobertaCli, MakeFixtureWritesEachArch) {
  std::string cli = test::cli_path();
  for (const char* arch : {"bert", "roberta", "xlm-roberta", "modernbert", "mpnet"}) {
    std::string dir = make_temp_dir("family_cli");
    auto r = test::run_command(cli + " make-fixture --arch " + arch + " --out " + dir + "/m 2>&1");
    ASSERT_EQ(r.exit_code, 0) << r.out;
    auto cfg = nlohmann::json::parse(std::ifstream(dir + "/m/config.json"));
    EXPECT_EQ(cfg["model_type"], arch);
    auto e = test::run_command(cli + " embed --model " + dir + "/m 'hello world' 2>/dev/null");
    ASSERT_EQ(e.exit_code, 0);
    EXPECT_EQ(nlohmann::json::parse(e.out)["embedding"].size(), 64u);
  }
  EXPECT_EQ(test::run_command(cli + " make-fixture --arch gpt2 --out /tmp/x 2>/dev/null").exit_code, 2);
  // An option found bad after the tokenizer files are written: a clear error and no half model
  // left behind (the folder did not exist before); an existing folder is kept.
  for (const char* arch : {"bert", "roberta"}) {
    const std::string dir = make_temp_dir("family_cli_bad");
    auto r = test::run_command(cli + " make-fixture --arch " + arch + " --max-seq-length 600 --max-positions 512 --out " +
                               dir + "/m 2>&1");
    EXPECT_EQ(r.exit_code, 1) << r.out;
    EXPECT_NE(r.out.find("max_seq_length 600 exceeds"), std::string::npos) << r.out;
    EXPECT_FALSE(std::filesystem::exists(dir + "/m")) << arch;
    r = test::run_command(cli + " make-fixture --arch " + arch + " --max-seq-length 600 --max-positions 512 --out " +
                          dir + " 2>&1");
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_TRUE(std::filesystem::is_directory(dir));
  }
}

class FamilyTraining : public ::testing::TestWithParam<std::string> {};

TEST_P(FamilyTraining, TrainEncoderRunsAFewStepsAndTheResultLoads) {
  const std::string arch = GetParam();
  std::string dir = make_temp_dir("family_train");
  auto f = family_fixture(arch, Pooling::Mean);
  f.config.num_hidden_layers = arch == "modernbert" ? 2 : 1;
  write_fixture_model(dir + "/model", f);
  {
    std::ofstream out(dir + "/pairs.tsv");
    out << "sentence1\tsentence2\n";
    const char* words[] = {"dog", "cat", "bird", "car", "house", "tree", "river", "city"};
    for (const char* a : words)
      for (const char* b : words) out << "the " << a << " saw a " << b << "\ta " << b << " was seen by the " << a << "\n";
  }
  EncoderTrainOptions o;
  o.model_dir = dir + "/model";
  o.train_path = dir + "/pairs.tsv";
  o.lr = 1e-3;
  o.common.out_dir = dir + "/out";
  o.common.batch_size = 8;
  o.common.steps = 4;
  o.common.log_every = 2;
  o.common.threads = 1;
  o.common.progress = false;
  TrainReport r = train_encoder(o);
  EXPECT_EQ(r.steps, 4u);
  EXPECT_TRUE(std::isfinite(r.last_loss));
  auto enc = Encoder::load(dir + "/out/last");
  EXPECT_EQ(enc->info().config.model_type, arch);
  Embeddings e = enc->encode({"the dog saw a cat"});
  EXPECT_EQ(e.dim, 32u);
  // The saved weights keep the Hugging Face names, and differ from the start.
  auto w = SafetensorsFile::open(dir + "/out/last/model.safetensors");
  auto w0 = SafetensorsFile::open(dir + "/model/model.safetensors");
  const std::string probe = arch == "modernbert" ? "layers.1.attn.Wqkv.weight"
                            : arch == "mpnet"    ? "encoder.layer.0.attention.attn.q.weight"
                                                 : "encoder.layer.0.attention.self.query.weight";
  ASSERT_TRUE(w->contains(probe));
  EXPECT_NE(w->get(probe).to_float(), w0->get(probe).to_float());
}

INSTANTIATE_TEST_SUITE_P(Families, FamilyTraining, ::testing::Values("roberta", "modernbert", "mpnet"),
                         [](const ::testing::TestParamInfo<std::string>& i) { return i.param; });

TEST(Mpnet, BucketsAndNames) {
  // T5-style bidirectional buckets (32, max distance 128): exact up to 7 each way, then log.
  std::vector<long> rel = {0, 1, 7, 8, 15, 40, 127, 128, 500, -1, -7, -8, -20, -500};
  std::vector<int> want = {0, 17, 23, 24, 25, 28, 31, 31, 31, 1, 7, 8, 10, 15};
  for (size_t i = 0; i < rel.size(); ++i)
    EXPECT_EQ(test::NaiveBert::mpnet_bucket(rel[i], 32), want[i]) << "relative position " << rel[i];
  std::string dir = make_temp_dir("family_mpnet");
  auto f = family_fixture("mpnet", Pooling::Mean);
  f.bert_prefix = true;
  write_fixture_model(dir, f);
  auto w = SafetensorsFile::open(dir + "/model.safetensors");
  EXPECT_TRUE(w->contains("mpnet.encoder.relative_attention_bias.weight"));
  EXPECT_TRUE(w->contains("mpnet.encoder.layer.0.attention.attn.q.weight"));
  EXPECT_FALSE(w->contains("mpnet.embeddings.token_type_embeddings.weight"));
  auto cfg = nlohmann::json::parse(std::ifstream(dir + "/config.json"));
  EXPECT_EQ(cfg["architectures"][0], "MPNetModel");
  EXPECT_EQ(cfg["relative_attention_num_buckets"], 32);
}

TEST(ModernBertConfig, FieldNamesAndDefaults) {
  BertConfig c = parse_bert_config(R"({"model_type": "modernbert", "hidden_size": 64, "num_attention_heads": 4,
      "norm_eps": 1e-6, "norm_bias": true, "global_rope_theta": 8000.0, "local_attention": 8,
      "hidden_activation": "gelu_pytorch_tanh"})");
  EXPECT_DOUBLE_EQ(c.layer_norm_eps, 1e-6);
  EXPECT_TRUE(c.norm_bias);
  EXPECT_FALSE(c.attention_bias);
  EXPECT_FALSE(c.mlp_bias);
  EXPECT_DOUBLE_EQ(c.global_rope_theta, 8000.0);
  EXPECT_DOUBLE_EQ(c.local_rope_theta, 8000.0);  // absent: the global base
  EXPECT_EQ(c.global_attn_every_n_layers, 3);
  EXPECT_EQ(c.local_attention, 8);
  EXPECT_EQ(c.hidden_act, "gelu_pytorch_tanh");
  EXPECT_EQ(c.max_position_embeddings, 8192);
  BertConfig d = parse_bert_config(bert_config_to_json(c));
  EXPECT_EQ(d.model_type, "modernbert");
  EXPECT_DOUBLE_EQ(d.layer_norm_eps, 1e-6);
  EXPECT_TRUE(d.norm_bias);
  EXPECT_EQ(d.local_attention, 8);
  EXPECT_EQ(d.hidden_size, 64);
}

TEST(ModernBertFixture, HuggingFaceNames) {
  std::string dir = make_temp_dir("family_modern");
  auto f = family_fixture("modernbert", Pooling::Mean);
  f.bert_prefix = true;
  write_fixture_model(dir, f);
  auto w = SafetensorsFile::open(dir + "/model.safetensors");
  EXPECT_TRUE(w->contains("model.embeddings.tok_embeddings.weight"));
  EXPECT_TRUE(w->contains("model.layers.0.attn.Wqkv.weight"));
  EXPECT_FALSE(w->contains("model.layers.0.attn_norm.weight"));  // identity on layer 0
  EXPECT_TRUE(w->contains("model.layers.1.attn_norm.weight"));
  EXPECT_TRUE(w->contains("model.final_norm.weight"));
  EXPECT_FALSE(w->contains("model.final_norm.bias"));
  auto cfg = nlohmann::json::parse(std::ifstream(dir + "/config.json"));
  EXPECT_EQ(cfg["architectures"][0], "ModernBertModel");
  EXPECT_EQ(cfg["global_attn_every_n_layers"], 2);
  EXPECT_FALSE(cfg.contains("layer_norm_eps"));
}

}  // namespace
}  // namespace sieve
