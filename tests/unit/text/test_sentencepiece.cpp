// SentencePiece tokenizer over tiny models trained here at runtime with libsentencepiece's own
// trainer; checks are against libsentencepiece itself (decode round trip, its piece ids) and the
// input text (offsets), never against numbers computed by the code under test.
#include <gtest/gtest.h>
#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "core/file_util.h"
#include "sieve/error.h"
#include "sieve/tokenizer.h"

namespace sieve {
namespace {

// Trains two models once per run: one with BERT-style control symbols, one with SentencePiece's
// defaults plus <s>/</s>/<pad> ids.
class SentencePieceModels : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    char tmpl[] = "/tmp/sieve_test_sp_XXXXXX";
    char* p = mkdtemp(tmpl);
    ASSERT_NE(p, nullptr);
    dir_ = new std::string(p);
    const std::vector<std::string> words = {
        "the", "quick", "brown", "fox", "jumps", "over", "lazy", "dog", "search", "engine",
        "token", "tokens", "model", "models", "vector", "index", "query", "queries", "hello",
        "world", "semantic", "near", "miss", "test", "tests", "sentence", "piece"};
    std::string corpus;
    unsigned x = 12345;
    for (int line = 0; line < 400; ++line) {
      for (int k = 0; k < 8; ++k) {
        x = x * 1103515245u + 12345u;
        if (k) corpus += ' ';
        corpus += words[(x >> 16) % words.size()];
      }
      corpus += (line % 5 == 0) ? ".\n" : "\n";
    }
    std::string input = path_join(*dir_, "corpus.txt");
    std::ofstream(input) << corpus;

    std::string bert_dir = path_join(*dir_, "bert");
    std::string plain_dir = path_join(*dir_, "plain");
    ASSERT_EQ(std::system(("mkdir -p '" + bert_dir + "' '" + plain_dir + "'").c_str()), 0);
    auto st = sentencepiece::SentencePieceTrainer::Train(
        "--input=" + input + " --model_prefix=" + path_join(bert_dir, "spiece") +
        " --vocab_size=120 --model_type=unigram --character_coverage=1.0"
        " --hard_vocab_limit=false --control_symbols=[CLS],[SEP],[PAD],[MASK]"
        " --bos_id=-1 --eos_id=-1 --minloglevel=2");
    ASSERT_TRUE(st.ok()) << st.ToString();
    st = sentencepiece::SentencePieceTrainer::Train(
        "--input=" + input + " --model_prefix=" + path_join(plain_dir, "m") +
        " --vocab_size=100 --model_type=bpe --character_coverage=1.0"
        " --hard_vocab_limit=false --pad_id=3 --minloglevel=2");
    ASSERT_TRUE(st.ok()) << st.ToString();
    bert_model_ = new std::string(path_join(bert_dir, "spiece.model"));
    plain_model_ = new std::string(path_join(plain_dir, "m.model"));
  }
  static void TearDownTestSuite() {
    if (dir_) std::system(("rm -rf '" + *dir_ + "'").c_str());
    delete dir_;
    delete bert_model_;
    delete plain_model_;
    dir_ = bert_model_ = plain_model_ = nullptr;
  }
  void SetUp() override {
    ASSERT_NE(bert_model_, nullptr) << "training the test models failed";
    ASSERT_TRUE(sp_.Load(*bert_model_).ok());
  }

  static std::string* dir_;
  static std::string* bert_model_;
  static std::string* plain_model_;
  sentencepiece::SentencePieceProcessor sp_;  // the library itself, as reference
};
std::string* SentencePieceModels::dir_ = nullptr;
std::string* SentencePieceModels::bert_model_ = nullptr;
std::string* SentencePieceModels::plain_model_ = nullptr;

TEST_F(SentencePieceModels, SpecialTokensAreTheModelsBertPieces) {
  auto t = make_sentencepiece_tokenizer(*bert_model_);
  SpecialTokens s = t->special_tokens();
  EXPECT_EQ(s.cls, sp_.PieceToId("[CLS]"));
  EXPECT_EQ(s.sep, sp_.PieceToId("[SEP]"));
  EXPECT_EQ(s.pad, sp_.PieceToId("[PAD]"));
  EXPECT_EQ(s.mask, sp_.PieceToId("[MASK]"));
  EXPECT_EQ(s.unk, sp_.unk_id());
  EXPECT_EQ(t->id_to_token(s.cls), "[CLS]");
  EXPECT_NE(s.cls, s.unk);
  EXPECT_EQ(t->vocab_size(), size_t(sp_.GetPieceSize()));
  EXPECT_EQ(t->model_max_length(), 512u);
  EXPECT_EQ(t->token_to_id("[SEP]"), s.sep);
  EXPECT_EQ(t->token_to_id("no such piece"), s.unk);
  EXPECT_THROW(t->id_to_token(int32_t(t->vocab_size())), Error);
}

TEST_F(SentencePieceModels, FallsBackToAngleBracketSpecials) {
  sentencepiece::SentencePieceProcessor ref;
  ASSERT_TRUE(ref.Load(*plain_model_).ok());
  auto t = make_sentencepiece_tokenizer(*plain_model_, 128);
  SpecialTokens s = t->special_tokens();
  EXPECT_EQ(s.cls, ref.PieceToId("<s>"));
  EXPECT_EQ(s.sep, ref.PieceToId("</s>"));
  EXPECT_EQ(s.pad, 3);
  EXPECT_EQ(s.mask, -1);  // the model has no mask piece
  EXPECT_EQ(t->model_max_length(), 128u);
  Encoding e = t->encode("hello world");
  EXPECT_EQ(e.ids.front(), ref.PieceToId("<s>"));
  EXPECT_EQ(e.ids.back(), ref.PieceToId("</s>"));
}

TEST_F(SentencePieceModels, IdsMatchTheLibraryAndDecodeBack) {
  auto t = make_sentencepiece_tokenizer(*bert_model_);
  for (const std::string text : {"hello world", "the quick brown fox jumps over the lazy dog.",
                                 "semantic search engine queries", "tokens"}) {
    std::vector<int> want;
    ASSERT_TRUE(sp_.Encode(text, &want).ok());
    std::vector<int> got;
    for (const auto& p : t->tokenize(text)) got.push_back(p.id);
    EXPECT_EQ(got, want) << text;
    std::string back;
    ASSERT_TRUE(sp_.Decode(got, &back).ok());
    EXPECT_EQ(back, text);
  }
}

TEST_F(SentencePieceModels, FramingAndTypeIds) {
  auto t = make_sentencepiece_tokenizer(*bert_model_);
  SpecialTokens s = t->special_tokens();
  Encoding e = t->encode("hello world");
  ASSERT_GE(e.ids.size(), 3u);
  EXPECT_EQ(e.ids.front(), s.cls);
  EXPECT_EQ(e.ids.back(), s.sep);
  EXPECT_EQ(e.offsets.front(), (std::pair<size_t, size_t>{0, 0}));
  EXPECT_EQ(e.offsets.back(), (std::pair<size_t, size_t>{0, 0}));

  Encoding p = t->encode_pair("hello", "world");
  size_t seps = 0;
  for (size_t i = 0; i < p.ids.size(); ++i) {
    if (p.ids[i] == s.sep) ++seps;
    // Type 1 starts right after the first [SEP].
    EXPECT_EQ(p.type_ids[i], seps == 0 || (seps == 1 && p.ids[i] == s.sep) ? 0 : 1);
  }
  EXPECT_EQ(seps, 2u);

  Batch b = t->encode_batch({"hello", "the quick brown fox jumps over the lazy dog"});
  EXPECT_EQ(b.items[0].ids.size(), b.seq_len);
  EXPECT_EQ(b.items[0].ids.back(), s.pad);
  EXPECT_EQ(b.items[0].attention_mask.back(), 0);
}

TEST_F(SentencePieceModels, OffsetsCoverTheOriginalText) {
  auto t = make_sentencepiece_tokenizer(*bert_model_);
  const std::string text = "the lazy fox searches the index";
  auto pieces = t->tokenize(text);
  ASSERT_FALSE(pieces.empty());
  EXPECT_EQ(pieces.front().begin, 0u);
  EXPECT_EQ(pieces.back().end, text.size());
  size_t prev = 0;
  for (const auto& p : pieces) {
    EXPECT_EQ(p.begin, prev);  // contiguous: together they cover every byte once
    EXPECT_LE(p.begin, p.end);
    prev = p.end;
    // The piece is its surface with spaces shown as U+2581 (the dummy prefix adds one at the
    // start of the text).
    std::string surface = text.substr(p.begin, p.end - p.begin);
    std::string shown;
    if (p.begin == 0) shown = "\xE2\x96\x81";
    for (char c : surface) shown += c == ' ' ? std::string("\xE2\x96\x81") : std::string(1, c);
    EXPECT_EQ(p.token, shown);
  }
}

TEST_F(SentencePieceModels, UnknownCharactersMapToUnk) {
  auto t = make_sentencepiece_tokenizer(*bert_model_);
  bool saw_unk = false;
  for (const auto& p : t->tokenize("hello \xE4\xB8\xAD"))  // 中 never occurs in the corpus
    saw_unk |= p.id == t->special_tokens().unk;
  EXPECT_TRUE(saw_unk);
}

TEST_F(SentencePieceModels, FromModelDirFindsTheModel) {
  std::string d = path_join(*dir_, "bert");
  std::ofstream(path_join(d, "tokenizer_config.json")) << R"({"model_max_length": 64})";
  auto t = Tokenizer::from_model_dir(d);
  EXPECT_EQ(t->vocab_size(), size_t(sp_.GetPieceSize()));
  EXPECT_EQ(t->model_max_length(), 64u);
  std::vector<int> want;
  ASSERT_TRUE(sp_.Encode("hello world", &want).ok());
  std::vector<int> got;
  for (const auto& p : t->tokenize("hello world")) got.push_back(p.id);
  EXPECT_EQ(got, want);
  // Any *.model name is found, not only spiece.model.
  EXPECT_EQ(Tokenizer::from_model_dir(path_join(*dir_, "plain"))->special_tokens().pad, 3);
}

TEST(SentencePieceErrors, MissingOrCorruptModel) {
  EXPECT_THROW(make_sentencepiece_tokenizer("/nonexistent/sieve/spiece.model"), Error);
  char tmpl[] = "/tmp/sieve_test_spbad_XXXXXX";
  char* p = mkdtemp(tmpl);
  ASSERT_NE(p, nullptr);
  std::string bad = path_join(p, "broken.model");
  std::ofstream(bad) << "this is not a protobuf";
  EXPECT_THROW(make_sentencepiece_tokenizer(bad), Error);
  EXPECT_THROW(Tokenizer::from_model_dir(p), Error);
  std::system(("rm -rf '" + std::string(p) + "'").c_str());
}

}  // namespace
}  // namespace sieve
