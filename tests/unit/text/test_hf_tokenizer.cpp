// Unit tests of the tokenizer.json reader: hand-computed tokenizations, framing from each
// post-processor, errors that name the JSON path, and from_model_dir's choice of reader.
// (The comparison with Hugging Face's own library is in test_hf_reference.cpp.)
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/file_util.h"
#include "sieve/error.h"
#include "sieve/tokenizer.h"

namespace sieve {
namespace {

using json = nlohmann::json;

// A word-level model over a few words, Whitespace pre-tokenizer.
json tiny() {
  json vocab = {{"[UNK]", 0}, {"[CLS]", 1}, {"[SEP]", 2}, {"[PAD]", 3}, {"hello", 4},
                {"world", 5}, {"!", 6},     {"<s>", 7},   {"</s>", 8}};
  return {{"version", "1.0"},
          {"added_tokens",
           {{{"id", 1}, {"content", "[CLS]"}, {"special", true}, {"normalized", false}},
            {{"id", 2}, {"content", "[SEP]"}, {"special", true}, {"normalized", false}}}},
          {"normalizer", {{"type", "Lowercase"}}},
          {"pre_tokenizer", {{"type", "Whitespace"}}},
          {"post_processor", nullptr},
          {"model", {{"type", "WordLevel"}, {"unk_token", "[UNK]"}, {"vocab", vocab}}}};
}

std::unique_ptr<Tokenizer> load(const json& j) { return parse_tokenizer_json(j.dump()); }

std::string error_of(const json& j) {
  try {
    load(j);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(HfTokenizer, WordLevelWithOffsets) {
  auto tok = load(tiny());
  auto p = tok->tokenize("Hello  WORLD!? x");
  ASSERT_EQ(p.size(), 4u);
  EXPECT_EQ(p[0].id, 4);
  EXPECT_EQ(p[1].id, 5);
  EXPECT_EQ(p[2].token, "[UNK]");  // "!?" is one Whitespace piece, not in the vocab
  EXPECT_EQ(p[0].begin, 0u);
  EXPECT_EQ(p[0].end, 5u);
  EXPECT_EQ(p[1].begin, 7u);
  EXPECT_EQ(p[1].end, 12u);
  EXPECT_EQ(p[2].begin, 12u);
  EXPECT_EQ(p[2].end, 14u);
}

// Found by fuzzing: one id far past the vocabulary's size made the id table that large (1.7 GB
// for 55,555,555 in a 3-entry vocabulary). It is refused with a message; small gaps still load.
TEST(HfTokenizer, VocabularyIdsFarPastTheSizeAreRefused) {
  json j = {{"model", {{"type", "BPE"}, {"vocab", {{"a", 55555555}, {"ab", 2}, {"<unk>", 3}}}, {"merges", {"a b"}},
                       {"unk_token", "<unk>"}}}};
  try {
    load(j);
    FAIL() << "loaded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("id 55555555 of 'a' is far past the 3 entries"), std::string::npos) << e.what();
  }
  j["model"]["vocab"] = {{"a", 0}, {"b", 1}, {"ab", 700}, {"<unk>", 3}};
  auto tok = load(j);
  EXPECT_EQ(tok->encode("ab").ids, (std::vector<int32_t>{700}));
}

// Found by fuzzing: a template's type_id of the wrong type escaped as nlohmann's exception
// instead of sieve::Error (the library's contract for bad input).
TEST(HfTokenizer, TemplateTypeIdsMustBeSmallWholeNumbers) {
  for (const json bad : {json("[SEP]"), json(-1), json(1.5), json(1000)}) {
    json j = {{"model", {{"type", "WordLevel"}, {"vocab", {{"a", 0}, {"[UNK]", 1}, {"[CLS]", 2}}}, {"unk_token", "[UNK]"}}},
              {"post_processor",
               {{"type", "TemplateProcessing"},
                {"single", json::array({{{"SpecialToken", {{"id", "[CLS]"}, {"type_id", bad}}}},
                                        {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}})},
                {"pair", json::array({{{"Sequence", {{"id", "A"}, {"type_id", 0}}}}})},
                {"special_tokens", {{"[CLS]", {{"id", "[CLS]"}, {"ids", {2}}, {"tokens", {"[CLS]"}}}}}}}}};
    try {
      load(j);
      ADD_FAILURE() << "loaded with type_id " << bad;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("type_id: expected a whole number from 0 to 255"), std::string::npos) << e.what();
    }
  }
}

TEST(HfTokenizer, AddedTokensAreCutFirst) {
  auto tok = load(tiny());
  auto p = tok->tokenize("hello[SEP]world");
  ASSERT_EQ(p.size(), 3u);
  EXPECT_EQ(p[1].id, 2);
  EXPECT_EQ(p[1].begin, 5u);
  EXPECT_EQ(p[1].end, 10u);
  // Special tokens are not normalized: lower-case "[sep]" is plain text.
  auto q = tok->tokenize("[sep]");
  EXPECT_NE(q.size(), 1u);
}

TEST(HfTokenizer, NoPostProcessorMeansNoFraming) {
  auto tok = load(tiny());
  Encoding e = tok->encode("hello world");
  EXPECT_EQ(e.ids, (std::vector<int32_t>{4, 5}));
  Encoding pr = tok->encode_pair("hello", "world");
  EXPECT_EQ(pr.ids, (std::vector<int32_t>{4, 5}));
  EXPECT_EQ(pr.type_ids, (std::vector<int32_t>{0, 1}));
}

TEST(HfTokenizer, RobertaFraming) {
  json j = tiny();
  j["post_processor"] = {{"type", "RobertaProcessing"}, {"sep", {"</s>", 8}}, {"cls", {"<s>", 7}}};
  auto tok = load(j);
  Encoding e = tok->encode_pair("hello", "world");
  EXPECT_EQ(e.ids, (std::vector<int32_t>{7, 4, 8, 8, 5, 8}));
  EXPECT_EQ(e.tokens[0], "<s>");
  Encoding s = tok->encode("hello world");
  EXPECT_EQ(s.ids, (std::vector<int32_t>{7, 4, 5, 8}));
  EncodeOptions no;
  no.add_special_tokens = false;
  EXPECT_EQ(tok->encode("hello world", no).ids, (std::vector<int32_t>{4, 5}));
  // Truncation keeps room for the four specials of a pair.
  EncodeOptions eo;
  eo.max_length = 5;
  Encoding t = tok->encode_pair("hello world", "world", eo);
  EXPECT_EQ(t.ids.size(), 5u);
  EXPECT_TRUE(t.truncated);
  EXPECT_EQ(tok->special_tokens().cls, 7);
  EXPECT_EQ(tok->special_tokens().sep, 8);
}

TEST(HfTokenizer, TemplateFramingAndTypeIds) {
  json j = tiny();
  json sp = {{"[CLS]", {{"id", "[CLS]"}, {"ids", {1}}, {"tokens", {"[CLS]"}}}},
             {"[SEP]", {{"id", "[SEP]"}, {"ids", {2}}, {"tokens", {"[SEP]"}}}}};
  j["post_processor"] = {
      {"type", "TemplateProcessing"},
      {"single", {{{"SpecialToken", {{"id", "[CLS]"}, {"type_id", 0}}}}, {{"Sequence", {{"id", "A"}, {"type_id", 0}}}},
                  {{"SpecialToken", {{"id", "[SEP]"}, {"type_id", 0}}}}}},
      {"pair", {{{"SpecialToken", {{"id", "[CLS]"}, {"type_id", 0}}}}, {{"Sequence", {{"id", "A"}, {"type_id", 0}}}},
                {{"SpecialToken", {{"id", "[SEP]"}, {"type_id", 0}}}}, {{"Sequence", {{"id", "B"}, {"type_id", 1}}}},
                {{"SpecialToken", {{"id", "[SEP]"}, {"type_id", 1}}}}}},
      {"special_tokens", sp}};
  j["truncation"] = {{"max_length", 7}, {"strategy", "LongestFirst"}};
  j["padding"] = {{"strategy", "BatchLongest"}, {"pad_id", 3}, {"pad_token", "[PAD]"}};
  auto tok = load(j);
  EXPECT_EQ(tok->model_max_length(), 7u);
  Encoding e = tok->encode_pair("hello", "world !");
  EXPECT_EQ(e.ids, (std::vector<int32_t>{1, 4, 2, 5, 6, 2}));
  EXPECT_EQ(e.type_ids, (std::vector<int32_t>{0, 0, 0, 1, 1, 1}));
  EXPECT_EQ(e.offsets[0], (std::pair<size_t, size_t>{0, 0}));
  Batch b = tok->encode_batch({"hello", "hello world !"});
  EXPECT_EQ(b.items[0].ids.back(), 3);
}

TEST(HfTokenizer, ByteLevelBpe) {
  // A toy byte-level BPE: "Ġ" is the space byte; merges build "Ġhi".
  json vocab = json::object();
  int n = 0;
  for (const char* t : {"h", "i", "\xC4\xA0", "\xC4\xA0h", "\xC4\xA0hi", "hi", "!"}) vocab[t] = n++;
  json j = {{"model", {{"type", "BPE"}, {"vocab", vocab},
                       {"merges", {"\xC4\xA0 h", "\xC4\xA0h i", "h i"}}}},
            {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"use_regex", true}}},
            {"post_processor", {{"type", "ByteLevel"}, {"trim_offsets", true}}}};
  auto tok = load(j);
  auto p = tok->tokenize("hi hi!");
  ASSERT_EQ(p.size(), 3u);
  EXPECT_EQ(p[0].token, "\xC4\xA0hi");
  EXPECT_EQ(p[1].token, "\xC4\xA0hi");
  EXPECT_EQ(p[2].token, "!");
  EXPECT_EQ(p[1].begin, 3u);  // trimmed: the space is not part of the second word's span
  EXPECT_EQ(p[1].end, 5u);
}

TEST(HfTokenizer, UnigramViterbi) {
  json j = {{"pre_tokenizer", {{"type", "Metaspace"}, {"replacement", "\xE2\x96\x81"}, {"prepend_scheme", "always"}}},
            {"model", {{"type", "Unigram"}, {"unk_id", 0},
                       {"vocab", json::array({json::array({"<unk>", 0.0}), json::array({"\xE2\x96\x81", -2.0}),
                                              json::array({"\xE2\x96\x81" "ab", -1.0}), json::array({"a", -3.0}),
                                              json::array({"b", -3.0}), json::array({"ab", -2.5}),
                                              json::array({"abc", -1.0}), json::array({"c", -3.0})})}}}};
  auto tok = load(j);
  auto p = tok->tokenize("ab abc");
  ASSERT_EQ(p.size(), 3u);
  EXPECT_EQ(p[0].token, "\xE2\x96\x81" "ab");
  EXPECT_EQ(p[1].token, "\xE2\x96\x81");
  EXPECT_EQ(p[2].token, "abc");
  auto u = tok->tokenize("xy");  // unknown characters fuse into one <unk> carrying the text
  ASSERT_EQ(u.size(), 2u);
  EXPECT_EQ(u[1].id, 0);
  EXPECT_EQ(u[1].token, "xy");
}

TEST(HfTokenizer, ErrorsNameTheJsonPath) {
  json j = tiny();
  j["pre_tokenizer"] = {{"type", "Sequence"}, {"pretokenizers", {{{"type", "Whitespace"}}, {{"type", "Foo"}}}}};
  EXPECT_NE(error_of(j).find("pre_tokenizer.pretokenizers[1]: unknown type 'Foo'"), std::string::npos)
      << error_of(j);

  j = tiny();
  j["normalizer"] = {{"type", "Sequence"}, {"normalizers", {{{"type", "NFC"}}, {{"type", "Precompiled"}, {"precompiled_charsmap", "AAAA"}}}}};
  std::string e = error_of(j);
  EXPECT_NE(e.find("normalizer.normalizers[1]"), std::string::npos) << e;
  EXPECT_NE(e.find("Precompiled"), std::string::npos) << e;
  EXPECT_NE(e.find("sentencepiece.bpe.model"), std::string::npos) << e;

  j = tiny();
  j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"Regex", "(unclosed"}}}, {"behavior", "Isolated"}};
  e = error_of(j);
  EXPECT_NE(e.find("pre_tokenizer.pattern"), std::string::npos) << e;
  EXPECT_NE(e.find("PCRE2"), std::string::npos) << e;

  json bpe = {{"model", {{"type", "BPE"}, {"vocab", {{"a", 0}, {"b", 1}}}, {"merges", {"a b"}}}}};
  e = error_of(bpe);
  EXPECT_NE(e.find("model.merges[0]: merged token 'ab' is not in the vocab"), std::string::npos) << e;
  bpe["model"]["merges"] = json::array({json::array({"a", "c"})});
  e = error_of(bpe);
  EXPECT_NE(e.find("model.merges[0]: merge token 'c' is not in the vocab"), std::string::npos) << e;
  bpe["model"]["merges"] = json::array();
  bpe["model"]["dropout"] = 0.1;
  e = error_of(bpe);
  EXPECT_NE(e.find("model.dropout"), std::string::npos) << e;

  for (const char* refused : {"UnicodeScripts", "FixedLength"}) {
    j = tiny();
    j["pre_tokenizer"] = {{"type", refused}};
    e = error_of(j);
    EXPECT_NE(e.find(std::string("pre_tokenizer: the '") + refused + "' pre-tokenizer"), std::string::npos) << e;
    EXPECT_NE(e.find("does not implement"), std::string::npos) << e;
  }

  j = tiny();
  j["model"]["type"] = "Mystery";
  EXPECT_NE(error_of(j).find("model: unknown type 'Mystery'"), std::string::npos);
  j = tiny();
  j["post_processor"] = {{"type", "Nope"}};
  EXPECT_NE(error_of(j).find("post_processor: unknown type 'Nope'"), std::string::npos);
  EXPECT_THROW(parse_tokenizer_json("{not json"), Error);
}

class HfModelDir : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/sieve_test_hfdir_XXXXXX";
    char* p = mkdtemp(tmpl);
    ASSERT_NE(p, nullptr);
    dir_ = p;
  }
  void TearDown() override { std::system(("rm -rf '" + dir_ + "'").c_str()); }
  std::string dir_;
};

TEST_F(HfModelDir, NonWordPieceTokenizerJsonUsesTheReader) {
  json j = tiny();
  j["post_processor"] = {{"type", "RobertaProcessing"}, {"sep", {"</s>", 8}}, {"cls", {"<s>", 7}}};
  std::ofstream(path_join(dir_, "tokenizer.json")) << j.dump();
  std::ofstream(path_join(dir_, "tokenizer_config.json")) << R"({"model_max_length": 64})";
  auto tok = Tokenizer::from_model_dir(dir_);
  EXPECT_EQ(tok->encode("hello").ids, (std::vector<int32_t>{7, 4, 8}));
  EXPECT_EQ(tok->model_max_length(), 64u);
}

TEST_F(HfModelDir, WordPieceTokenizerJsonKeepsTheWordPieceRoute) {
  json j = {{"normalizer", {{"type", "BertNormalizer"}, {"lowercase", true}}},
            {"pre_tokenizer", {{"type", "BertPreTokenizer"}}},
            {"model", {{"type", "WordPiece"}, {"unk_token", "[UNK]"}, {"continuing_subword_prefix", "##"},
                       {"vocab", {{"[PAD]", 0}, {"[UNK]", 1}, {"[CLS]", 2}, {"[SEP]", 3}, {"hello", 4}, {"##s", 5}}}}}};
  std::ofstream(path_join(dir_, "tokenizer.json")) << j.dump();
  std::ofstream(path_join(dir_, "tokenizer_config.json")) << R"({"do_lower_case": true})";
  auto tok = Tokenizer::from_model_dir(dir_);
  EXPECT_EQ(tok->encode("Hellos").ids, (std::vector<int32_t>{2, 4, 5, 3}));
  EXPECT_EQ(tok->framing(), nullptr);  // BERT's own framing
  // The reader gives the same ids for this file when loaded directly (no post-processor: no framing).
  auto direct = load_tokenizer_json(path_join(dir_, "tokenizer.json"));
  EXPECT_EQ(direct->encode("Hellos").ids, (std::vector<int32_t>{4, 5}));
}

// all-mpnet-base-v2's shape: a WordPiece vocabulary (with vocab.txt beside it) framed as RoBERTa
// frames, <s> ... </s>, with <pad> at 1. Neither the WordPiece route nor vocab.txt knows that
// framing (they would write [CLS] ... [SEP], which the vocabulary also holds), so the reader must
// take it.
TEST_F(HfModelDir, WordPieceTokenizerJsonWithRobertaFramingUsesTheReader) {
  json j = {{"added_tokens", json::array({{{"id", 0}, {"content", "<s>"}, {"special", true}},
                                          {{"id", 1}, {"content", "<pad>"}, {"special", true}},
                                          {{"id", 2}, {"content", "</s>"}, {"special", true}}})},
            {"normalizer", {{"type", "BertNormalizer"}, {"lowercase", true}}},
            {"pre_tokenizer", {{"type", "BertPreTokenizer"}}},
            {"post_processor", {{"type", "RobertaProcessing"}, {"sep", {"</s>", 2}}, {"cls", {"<s>", 0}}}},
            {"model", {{"type", "WordPiece"}, {"unk_token", "[UNK]"}, {"continuing_subword_prefix", "##"},
                       {"vocab", {{"<s>", 0}, {"<pad>", 1}, {"</s>", 2}, {"[UNK]", 3}, {"[CLS]", 4}, {"[SEP]", 5},
                                  {"hello", 6}, {"##s", 7}}}}}};
  std::ofstream(path_join(dir_, "tokenizer.json")) << j.dump();
  std::ofstream(path_join(dir_, "vocab.txt")) << "<s>\n<pad>\n</s>\n[UNK]\n[CLS]\n[SEP]\nhello\n##s\n";
  auto tok = Tokenizer::from_model_dir(dir_);
  EXPECT_EQ(tok->encode("Hellos").ids, (std::vector<int32_t>{0, 6, 7, 2}));
  EXPECT_EQ(tok->special_tokens().pad, 1);
  // With BERT's own framing the same vocabulary keeps the WordPiece route: [CLS] ... [SEP].
  j["post_processor"] = {{"type", "BertProcessing"}, {"sep", {"[SEP]", 5}}, {"cls", {"[CLS]", 4}}};
  std::ofstream(path_join(dir_, "tokenizer.json")) << j.dump();
  EXPECT_EQ(Tokenizer::from_model_dir(dir_)->encode("Hellos").ids, (std::vector<int32_t>{4, 6, 7, 5}));
}

}  // namespace
}  // namespace sieve
