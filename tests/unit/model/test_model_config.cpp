// config.json and sentence-transformers layout parsing.
#include <gtest/gtest.h>

#include <fstream>

#include "sieve/error.h"
#include "sieve/model.h"
#include "support/test_util.h"

namespace sieve {
namespace {

// all-MiniLM-L6-v2's published config.json (public facts: 6 layers, hidden 384, 12 heads, FFN 1536).
const char* kMiniLmConfig = R"({
  "_name_or_path": "nreimers/MiniLM-L6-H384-uncased",
  "architectures": ["BertModel"], "attention_probs_dropout_prob": 0.1,
  "gradient_checkpointing": false, "hidden_act": "gelu", "hidden_dropout_prob": 0.1,
  "hidden_size": 384, "initializer_range": 0.02, "intermediate_size": 1536,
  "layer_norm_eps": 1e-12, "max_position_embeddings": 512, "model_type": "bert",
  "num_attention_heads": 12, "num_hidden_layers": 6, "pad_token_id": 0,
  "position_embedding_type": "absolute", "transformers_version": "4.8.2",
  "type_vocab_size": 2, "use_cache": true, "vocab_size": 30522})";

TEST(BertConfig, ParsesMiniLmConfig) {
  BertConfig c = parse_bert_config(kMiniLmConfig);
  EXPECT_EQ(c.hidden_size, 384);
  EXPECT_EQ(c.num_hidden_layers, 6);
  EXPECT_EQ(c.num_attention_heads, 12);
  EXPECT_EQ(c.intermediate_size, 1536);
  EXPECT_EQ(c.vocab_size, 30522);
  EXPECT_EQ(c.max_position_embeddings, 512);
  EXPECT_EQ(c.type_vocab_size, 2);
  EXPECT_DOUBLE_EQ(c.layer_norm_eps, 1e-12);
  EXPECT_EQ(c.hidden_act, "gelu");
}

TEST(BertConfig, RoundTripsThroughJson) {
  BertConfig c;
  c.hidden_size = 48;
  c.num_attention_heads = 3;
  c.hidden_act = "relu";
  c.layer_norm_eps = 1e-5;
  BertConfig d = parse_bert_config(bert_config_to_json(c));
  EXPECT_EQ(d.hidden_size, 48);
  EXPECT_EQ(d.num_attention_heads, 3);
  EXPECT_EQ(d.hidden_act, "relu");
  EXPECT_DOUBLE_EQ(d.layer_norm_eps, 1e-5);
}

TEST(BertConfig, RejectsBadInput) {
  EXPECT_THROW(parse_bert_config("[1,2]"), Error);
  EXPECT_THROW(parse_bert_config("{"), Error);
  EXPECT_THROW(parse_bert_config(R"({"model_type":"t5"})"), Error);
  EXPECT_THROW(parse_bert_config(R"({"hidden_act":"swish"})"), Error);
  EXPECT_THROW(parse_bert_config(R"({"hidden_size":"384"})"), Error);
  EXPECT_THROW(parse_bert_config(R"({"num_hidden_layers":-1})"), Error);
  EXPECT_THROW(parse_bert_config(R"({"position_embedding_type":"relative_key"})"), Error);
  EXPECT_THROW(parse_bert_config(R"({"hidden_size":100,"num_attention_heads":12})"), Error);
}

TEST(Pooling, Names) {
  EXPECT_EQ(pooling_from_name("cls"), Pooling::Cls);
  EXPECT_EQ(pooling_from_name("mean"), Pooling::Mean);
  EXPECT_EQ(pooling_from_name("lasttoken"), Pooling::LastToken);
  EXPECT_THROW(pooling_from_name("max"), Error);
}

void write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

TEST(ModelInfo, ReadsSentenceTransformersFiles) {
  std::string dir = test::make_temp_dir("info");
  write(dir + "/config.json", kMiniLmConfig);
  write(dir + "/model.safetensors", "x");  // only existence is checked here
  EXPECT_EQ(read_model_info(dir).pooling_from_files, false);
  EXPECT_EQ(read_model_info(dir).max_seq_length, 512u);

  ::mkdir((dir + "/pool").c_str(), 0755);
  write(dir + "/modules.json", R"([{"idx":0,"name":"0","path":"","type":"sentence_transformers.models.Transformer"},
    {"idx":1,"name":"1","path":"pool","type":"sentence_transformers.models.Pooling"},
    {"idx":2,"name":"2","path":"2_Normalize","type":"sentence_transformers.models.Normalize"}])");
  write(dir + "/pool/config.json", R"({"word_embedding_dimension":384,"pooling_mode_cls_token":true,
    "pooling_mode_mean_tokens":false,"pooling_mode_max_tokens":false,"pooling_mode_mean_sqrt_len_tokens":false})");
  write(dir + "/sentence_bert_config.json", R"({"max_seq_length": 256, "do_lower_case": false})");
  ModelInfo info = read_model_info(dir);
  EXPECT_TRUE(info.pooling_from_files);
  EXPECT_EQ(info.pooling, Pooling::Cls);
  EXPECT_TRUE(info.normalize_module);
  EXPECT_EQ(info.max_seq_length, 256u);

  write(dir + "/pool/config.json", R"({"pooling_mode_max_tokens":true})");
  EXPECT_THROW(read_model_info(dir), Error);
  write(dir + "/pool/config.json", R"({"pooling_mode_cls_token":true,"pooling_mode_mean_tokens":true})");
  EXPECT_THROW(read_model_info(dir), Error);
  // Fields of the wrong type are sieve errors naming the file, not nlohmann's exceptions.
  write(dir + "/pool/config.json", R"({"pooling_mode_cls_token":"yes"})");
  test::expect_error([&] { read_model_info(dir); }, "'pooling_mode_cls_token' must be true or false");
  write(dir + "/pool/config.json", R"({"pooling_mode_cls_token":true})");
  write(dir + "/modules.json", R"([{"idx":1,"path":"pool","type":5}])");
  test::expect_error([&] { read_model_info(dir); }, "modules.json: 'type' must be a string");
}

TEST(ModelInfo, MissingPiecesAreNamed) {
  std::string dir = test::make_temp_dir("info_missing");
  try {
    read_model_info(dir);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("config.json"), std::string::npos);
  }
  write(dir + "/config.json", kMiniLmConfig);
  try {
    read_model_info(dir);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("model.safetensors"), std::string::npos);
  }
}

TEST(FixtureVocab, HasBertSpecialsAtTheirUsualIds) {
  auto v = builtin_fixture_vocab(0);
  ASSERT_GT(v.size(), 200u);
  EXPECT_EQ(v[0], "[PAD]");
  EXPECT_EQ(v[1], "[UNK]");
  EXPECT_EQ(v[2], "[CLS]");
  EXPECT_EQ(v[3], "[SEP]");
  EXPECT_EQ(builtin_fixture_vocab(1000).size(), 1000u);
}

}  // namespace
}  // namespace sieve
