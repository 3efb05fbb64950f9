// WordPiece against the real bert-base-uncased vocabulary. Expected ids are public facts: the
// ids Hugging Face documents ("Hello world", "Hello, my dog is cute"), or tokens looked up by hand
// in the vocabulary file (id = line number - 1) for splits BERT's published rules produce.
#include <gtest/gtest.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/file_util.h"
#include "sieve/error.h"
#include "sieve/tokenizer.h"
#include "unit/text/prefix_check.h"

namespace sieve {
namespace {

const std::string kVocabPath = std::string(SIEVE_SHARED_DATA) + "/vocab/bert-base-uncased-vocab.txt";

using Ids = std::vector<int32_t>;

class BertUncased : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!is_file(kVocabPath)) return;
    vocab_ = new std::vector<std::string>(read_vocab_txt(kVocabPath));
    tok_ = make_wordpiece_tokenizer(*vocab_).release();
  }
  static void TearDownTestSuite() {
    delete tok_;
    delete vocab_;
    tok_ = nullptr;
    vocab_ = nullptr;
  }
  void SetUp() override {
    if (!tok_) GTEST_SKIP() << "bert-base-uncased vocabulary not found at " << kVocabPath;
  }
  // Ids of tokenize() (no specials).
  static Ids ids(const std::string& text) {
    Ids out;
    for (const auto& p : tok_->tokenize(text)) out.push_back(p.id);
    return out;
  }
  static std::vector<std::string> tokens(const std::string& text) {
    std::vector<std::string> out;
    for (const auto& p : tok_->tokenize(text)) out.push_back(p.token);
    return out;
  }
  static std::vector<std::string>* vocab_;
  static Tokenizer* tok_;
};
std::vector<std::string>* BertUncased::vocab_ = nullptr;
Tokenizer* BertUncased::tok_ = nullptr;

// A scratch directory removed at the end of the test.
class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/sieve_test_wp_XXXXXX";
    char* p = mkdtemp(tmpl);
    if (p) path_ = p;
  }
  ~TempDir() {
    if (!path_.empty()) std::system(("rm -rf '" + path_ + "'").c_str());
  }
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_join(path_, name); }
  void write(const std::string& name, const std::string& content) const {
    std::ofstream(file(name), std::ios::binary) << content;
  }

 private:
  std::string path_;
};

// --- vocabulary and special tokens ------------------------------------------------------------

TEST_F(BertUncased, VocabularyAndSpecialIds) {
  EXPECT_EQ(tok_->vocab_size(), 30522u);
  SpecialTokens sp = tok_->special_tokens();
  EXPECT_EQ(sp.pad, 0);
  EXPECT_EQ(sp.unk, 100);
  EXPECT_EQ(sp.cls, 101);
  EXPECT_EQ(sp.sep, 102);
  EXPECT_EQ(sp.mask, 103);
  EXPECT_EQ(tok_->token_to_id("hello"), 7592);
  EXPECT_EQ(tok_->token_to_id("##able"), 3085);
  EXPECT_EQ(tok_->token_to_id("no-such-token-xyz"), 100);
  EXPECT_EQ(tok_->id_to_token(7592), "hello");
  EXPECT_EQ(tok_->id_to_token(101), "[CLS]");
  EXPECT_THROW(tok_->id_to_token(30522), Error);
  EXPECT_THROW(tok_->id_to_token(-1), Error);
  EXPECT_EQ(tok_->model_max_length(), 512u);
}

// --- Hugging Face's documented examples -------------------------------------------------------

TEST_F(BertUncased, HelloWorld) {
  Encoding e = tok_->encode("Hello world");
  EXPECT_EQ(e.ids, (Ids{101, 7592, 2088, 102}));
  EXPECT_EQ(e.tokens, (std::vector<std::string>{"[CLS]", "hello", "world", "[SEP]"}));
  EXPECT_EQ(e.type_ids, (Ids{0, 0, 0, 0}));
  EXPECT_EQ(e.attention_mask, (Ids{1, 1, 1, 1}));
  EXPECT_FALSE(e.truncated);
}

TEST_F(BertUncased, HelloMyDogIsCute) {
  // The input of the BertForSequenceClassification example in the transformers docs.
  EXPECT_EQ(tok_->encode("Hello, my dog is cute").ids,
            (Ids{101, 7592, 1010, 2026, 3899, 2003, 10140, 102}));
}

// --- WordPiece and the basic tokenizer --------------------------------------------------------

TEST_F(BertUncased, GreedyLongestMatchFirst) {
  // bert-base-uncased splits "unaffable" as una ##ffa ##ble (there is no "##aff" entry).
  EXPECT_EQ(tokens("unaffable"), (std::vector<std::string>{"una", "##ffa", "##ble"}));
  EXPECT_EQ(ids("unaffable"), (Ids{14477, 20961, 3468}));
  // Digits: "12345" and "1234" are not entries, "123" is; the rest is "##45".
  EXPECT_EQ(ids("12345"), (Ids{13138, 19961}));
}

TEST_F(BertUncased, LowerCaseAndAccentStripping) {
  EXPECT_EQ(ids("H\xC3\xA9llo"), (Ids{7592}));                        // Héllo
  EXPECT_EQ(ids("na\xC3\xAFve Caf\xC3\xA9"), (Ids{15743, 7668}));     // naïve Café
  EXPECT_EQ(ids("He\xCC\x81llo"), (Ids{7592}));                       // e + combining acute
  EXPECT_EQ(ids("\xC4\xB0stanbul"), (Ids{9960}));                     // İstanbul
  // NFD is canonical only: the fi ligature U+FB01 is its own entry.
  EXPECT_EQ(ids("\xEF\xAC\x81"), (Ids{1984}));
}

TEST_F(BertUncased, PunctuationSplits) {
  EXPECT_EQ(ids("don't"), (Ids{2123, 1005, 1056}));
  EXPECT_EQ(ids("..."), (Ids{1012, 1012, 1012}));
  EXPECT_EQ(ids("$5"), (Ids{1002, 1019}));  // '$' is punctuation by BERT's ASCII rule
  EXPECT_EQ(ids("hello\xE2\x80\x94world"), (Ids{7592, 1517, 2088}));  // em dash (Pd)
  EXPECT_EQ(ids("\xC2\xABhi\xC2\xBB"), (Ids{1077, 7632, 1090}));       // «hi»
}

TEST_F(BertUncased, ChineseCharactersStandAlone) {
  EXPECT_EQ(ids("\xE4\xB8\xAD\xE5\x9B\xBD"), (Ids{1746, 1799}));  // 中国, not 中 ##国
  EXPECT_EQ(ids("hello\xE4\xB8\xAD\xE5\x9B\xBDworld"), (Ids{7592, 1746, 1799, 2088}));
  // Kana are not in BERT's CJK ranges: こんにちは is one word, split by WordPiece.
  EXPECT_EQ(ids("\xE3\x81\x93\xE3\x82\x93\xE3\x81\xAB\xE3\x81\xA1\xE3\x81\xAF"),
            (Ids{1655, 30217, 30194, 30188, 30198}));
}

TEST_F(BertUncased, UnknownWordsBecomeOneUnk) {
  EXPECT_EQ(ids("\xF0\x9F\x98\x80"), (Ids{100}));                 // 😀
  EXPECT_EQ(ids("hello\xF0\x9F\x98\x80"), (Ids{100}));            // "hello" + "##😀" fails
  EXPECT_EQ(ids("hello \xF0\x9F\x98\x80 world"), (Ids{7592, 100, 2088}));
}

TEST_F(BertUncased, OverlongWordsBecomeUnk) {
  EXPECT_EQ(ids(std::string(101, 'a')), (Ids{100}));
  Ids hundred = ids(std::string(100, 'a'));
  ASSERT_FALSE(hundred.empty());
  EXPECT_NE(hundred[0], 100);
  EXPECT_GT(hundred.size(), 1u);
  // A word longer than the cap still costs one [UNK], with the word's full span.
  auto p = tok_->tokenize("x " + std::string(150, 'b') + " y");
  ASSERT_EQ(p.size(), 3u);
  EXPECT_EQ(p[1].id, 100);
  EXPECT_EQ(p[1].begin, 2u);
  EXPECT_EQ(p[1].end, 152u);
}

TEST_F(BertUncased, EmptyAndWhitespaceOnly) {
  EXPECT_EQ(tok_->encode("").ids, (Ids{101, 102}));
  EXPECT_EQ(tok_->encode("   \t\n\r ").ids, (Ids{101, 102}));
  EXPECT_TRUE(tok_->tokenize("").empty());
}

TEST_F(BertUncased, WhitespaceKinds) {
  // tab, newline, CR, no-break space (Zs), ideographic space (Zs), line separator (Zl).
  EXPECT_EQ(ids("hello\tworld\nhi\r\xC2\xA0" "dog\xE3\x80\x80" "cute\xE2\x80\xA8" "foo"),
            (Ids{7592, 2088, 7632, 3899, 10140, 29379}));
}

TEST_F(BertUncased, ControlCharactersAreDropped) {
  // Dropped characters join their neighbours, as in BERT's _clean_text.
  EXPECT_EQ(ids("hel\x01lo"), (Ids{7592}));
  EXPECT_EQ(ids(std::string("hel\0lo", 6)), (Ids{7592}));
  EXPECT_EQ(ids("hel\xE2\x80\x8Blo"), (Ids{7592}));  // zero width space (Cf)
  EXPECT_EQ(ids("hel\x7Flo"), (Ids{7592}));          // DEL
  EXPECT_EQ(ids("\x0B\x0C"), (Ids{}));               // VT and FF are Cc: dropped, not spaces
}

TEST_F(BertUncased, InvalidUtf8IsDropped) {
  auto p = tok_->tokenize("hel\xFFlo world");
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].id, 7592);
  EXPECT_EQ(p[0].begin, 0u);
  EXPECT_EQ(p[0].end, 6u);
  EXPECT_EQ(p[1].id, 2088);
  EXPECT_EQ(ids("\xE4\xB8"), (Ids{}));  // truncated sequence only
  EXPECT_EQ(ids("\xEF\xBF\xBD"), (Ids{}));  // a literal U+FFFD is dropped too
}

TEST_F(BertUncased, SpecialTokensInTextAreKept) {
  // Hugging Face matches special tokens in the raw text before normalization (case-sensitive).
  EXPECT_EQ(ids("hello [MASK] world"), (Ids{7592, 103, 2088}));
  EXPECT_EQ(ids("a[SEP]b"), (Ids{1037, 102, 1038}));
  EXPECT_EQ(ids("[mask]"), (Ids{1031, 7308, 1033}));
}

// --- offsets ----------------------------------------------------------------------------------

TEST_F(BertUncased, OffsetsSliceTheOriginalText) {
  const std::string text = "Hello, World";
  Encoding e = tok_->encode(text);
  ASSERT_EQ(e.ids, (Ids{101, 7592, 1010, 2088, 102}));
  using Span = std::pair<size_t, size_t>;
  EXPECT_EQ(e.offsets, (std::vector<Span>{{0, 0}, {0, 5}, {5, 6}, {7, 12}, {0, 0}}));

  // Word pieces: the spans of una ##ffa ##ble tile the word.
  auto p = tok_->tokenize("An unaffable man");
  ASSERT_EQ(p.size(), 5u);
  EXPECT_EQ(text.size(), 12u);
  EXPECT_EQ(std::make_pair(p[1].begin, p[1].end), Span(3, 6));
  EXPECT_EQ(std::make_pair(p[2].begin, p[2].end), Span(6, 9));
  EXPECT_EQ(std::make_pair(p[3].begin, p[3].end), Span(9, 12));

  // Multi-byte characters: spans are bytes of the input, covering the accented letter.
  const std::string accented = "Caf\xC3\xA9 \xE4\xB8\xAD!";
  auto q = tok_->tokenize(accented);
  ASSERT_EQ(q.size(), 3u);
  EXPECT_EQ(accented.substr(q[0].begin, q[0].end - q[0].begin), "Caf\xC3\xA9");
  EXPECT_EQ(accented.substr(q[1].begin, q[1].end - q[1].begin), "\xE4\xB8\xAD");
  EXPECT_EQ(accented.substr(q[2].begin, q[2].end - q[2].begin), "!");
}

TEST_F(BertUncased, OffsetsGiveTheSurfaceOfEveryToken) {
  const std::string text = "The quick brown fox, don't you see? 12345 unaffable!";
  for (const auto& p : tok_->tokenize(text)) {
    ASSERT_LE(p.end, text.size());
    ASSERT_LT(p.begin, p.end);
    std::string surface = text.substr(p.begin, p.end - p.begin);
    for (char& c : surface) c = char(std::tolower(static_cast<unsigned char>(c)));
    std::string tok = p.token.rfind("##", 0) == 0 ? p.token.substr(2) : p.token;
    EXPECT_EQ(surface, tok);
  }
}

// --- options ----------------------------------------------------------------------------------

// A long text is tokenized only as far as the model reads (tokenize_prefix): the pieces, and
// encode()'s ids and truncation, are those of the whole text's tokenization, whatever sits at
// the cut (tabs, newlines, no-break spaces, control characters, CJK, accents, [SEP], overlong
// words, runs of spaces).
TEST_F(BertUncased, PrefixTokenizationIsTheWholeTextsStart) {
  const std::vector<std::string> parts = {"The dog bit the man.", "\t", "\n\n", "  ", "caf\xC3\xA9",
                                          "\xC2\xA0", "\x0C", "\x07x", "\xE4\xBD\xA0\xE5\xA5\xBD", "[SEP]",
                                          std::string(150, 'q'), "don't!", "   ", "1,234.5"};
  std::string text;
  for (int i = 0; i < 3000; ++i) text += parts[(i * 5) % parts.size()] + (i % 3 ? " " : "");
  ASSERT_GT(text.size(), 30000u);
  const std::vector<TokenPiece> all = tok_->tokenize(text);
  for (size_t n : {1, 2, 10, 126, 254, 510, 3000, 100000})
    EXPECT_EQ(test::prefix_mismatch(*tok_, text, n), "") << n;
  for (size_t cut = 1000; cut < 1300; cut += 7)  // every kind of byte at the first cut
    EXPECT_EQ(test::prefix_mismatch(*tok_, std::string_view(text).substr(cut), 126), "") << cut;
  EXPECT_EQ(test::cut_mismatch(*tok_, text, all, 40), "");
  EncodeOptions eo;
  eo.max_length = 128;
  const Encoding e = tok_->encode(text, eo);
  ASSERT_EQ(e.ids.size(), 128u);
  EXPECT_TRUE(e.truncated);
  for (size_t i = 0; i < 126; ++i) EXPECT_EQ(e.ids[i + 1], all[i].id) << i;
  EXPECT_TRUE(tok_->splits_at_spaces());
}

TEST_F(BertUncased, CasedOptionsOnUncasedVocab) {
  WordPieceOptions cased;
  cased.do_lower_case = false;
  auto t = make_wordpiece_tokenizer(*vocab_, cased);
  EXPECT_EQ(t->tokenize("Hello")[0].id, 100);  // no upper-case "H" in an uncased vocab
  EXPECT_EQ(t->tokenize("hello")[0].id, 7592);

  // Lower-case but keep accents: "é" is not in the uncased vocab, so the word is unknown.
  WordPieceOptions keep_accents;
  keep_accents.strip_accents_set = true;
  keep_accents.strip_accents = false;
  auto k = make_wordpiece_tokenizer(*vocab_, keep_accents);
  ASSERT_EQ(k->tokenize("H\xC3\xA9llo").size(), 1u);
  EXPECT_EQ(k->tokenize("H\xC3\xA9llo")[0].id, 100);
  EXPECT_EQ(k->tokenize("Hello")[0].id, 7592);

  // Without CJK spacing, 中国 is one word: 中 ##国.
  WordPieceOptions no_cjk;
  no_cjk.tokenize_chinese_chars = false;
  auto c = make_wordpiece_tokenizer(*vocab_, no_cjk);
  Ids got;
  for (const auto& p : c->tokenize("\xE4\xB8\xAD\xE5\x9B\xBD")) got.push_back(p.id);
  EXPECT_EQ(got, (Ids{1746, 30325}));
}

// --- framing ----------------------------------------------------------------------------------

TEST_F(BertUncased, PairEncoding) {
  Encoding e = tok_->encode_pair("Hello world", "my dog is cute");
  EXPECT_EQ(e.ids, (Ids{101, 7592, 2088, 102, 2026, 3899, 2003, 10140, 102}));
  EXPECT_EQ(e.type_ids, (Ids{0, 0, 0, 0, 1, 1, 1, 1, 1}));
  EXPECT_EQ(e.attention_mask, Ids(9, 1));
  EXPECT_EQ(e.offsets[4], (std::pair<size_t, size_t>{0, 2}));  // offsets are per text
  EXPECT_FALSE(e.truncated);
}

TEST_F(BertUncased, TruncationKeepsTheHeadAndTheSep) {
  EncodeOptions o;
  o.max_length = 5;
  Encoding e = tok_->encode("Hello, my dog is cute", o);
  EXPECT_EQ(e.ids, (Ids{101, 7592, 1010, 2026, 102}));
  EXPECT_TRUE(e.truncated);
  o.max_length = 2;
  e = tok_->encode("Hello world", o);
  EXPECT_EQ(e.ids, (Ids{101, 102}));
  EXPECT_TRUE(e.truncated);
  o.max_length = 4;
  e = tok_->encode("Hello world", o);
  EXPECT_FALSE(e.truncated);
  o.max_length = 1;
  EXPECT_THROW(tok_->encode("Hello world", o), Error);
  o.max_length = 2;
  EXPECT_THROW(tok_->encode_pair("a", "b", o), Error);
}

TEST_F(BertUncased, NoSpecialTokens) {
  EncodeOptions o;
  o.add_special_tokens = false;
  EXPECT_EQ(tok_->encode("Hello world", o).ids, (Ids{7592, 2088}));
  o.max_length = 1;
  Encoding e = tok_->encode("Hello world", o);
  EXPECT_EQ(e.ids, (Ids{7592}));
  EXPECT_TRUE(e.truncated);
}

TEST_F(BertUncased, DefaultMaxLengthIsModelMaxLength) {
  std::string text;
  for (int i = 0; i < 600; ++i) text += "hello ";
  Encoding e = tok_->encode(text);
  EXPECT_EQ(e.ids.size(), 512u);
  EXPECT_TRUE(e.truncated);
  EXPECT_EQ(e.ids.back(), 102);
}

TEST_F(BertUncased, PairTruncationLongestFirst) {
  // The length table of Hugging Face tokenizers' LongestFirst test (max_length 7 for the texts,
  // here plus 3 specials): short = 2 tokens, medium = 4, long = 8.
  const std::string s = "a b", m = "a b c d", l = "a b c d e f g h";
  struct Case {
    std::string a, b;
    size_t n1, n2;
  };
  const std::vector<Case> cases = {
      {"", s, 0, 2}, {"", l, 0, 7}, {s, s, 2, 2}, {s, m, 2, 4}, {s, l, 2, 5},
      {m, s, 4, 2},  {m, m, 3, 4}, {m, l, 3, 4}, {l, "", 7, 0}, {l, s, 5, 2},
      {l, m, 4, 3},  {l, l, 3, 4},
  };
  EncodeOptions o;
  o.max_length = 10;
  for (const Case& c : cases) {
    Encoding e = tok_->encode_pair(c.a, c.b, o);
    size_t n0 = 0, n1 = 0;
    for (int32_t t : e.type_ids) (t == 0 ? n0 : n1)++;
    EXPECT_EQ(n0, c.n1 + 2) << "'" << c.a << "' / '" << c.b << "'";
    EXPECT_EQ(n1, c.n2 + 1) << "'" << c.a << "' / '" << c.b << "'";
    EXPECT_EQ(e.truncated, c.n1 + c.n2 < tok_->tokenize(c.a).size() + tok_->tokenize(c.b).size());
    EXPECT_EQ(e.ids.back(), 102);
  }
}

TEST_F(BertUncased, BatchPadsToTheLongest) {
  Batch b = tok_->encode_batch({"Hello world", "Hello, my dog is cute", ""});
  ASSERT_EQ(b.items.size(), 3u);
  EXPECT_EQ(b.seq_len, 8u);
  EXPECT_EQ(b.items[0].ids, (Ids{101, 7592, 2088, 102, 0, 0, 0, 0}));
  EXPECT_EQ(b.items[0].attention_mask, (Ids{1, 1, 1, 1, 0, 0, 0, 0}));
  EXPECT_EQ(b.items[0].type_ids, Ids(8, 0));
  EXPECT_EQ(b.items[0].tokens[4], "[PAD]");
  EXPECT_EQ(b.items[0].offsets[7], (std::pair<size_t, size_t>{0, 0}));
  EXPECT_EQ(b.items[1].ids, (Ids{101, 7592, 1010, 2026, 3899, 2003, 10140, 102}));
  EXPECT_EQ(b.items[1].attention_mask, Ids(8, 1));
  EXPECT_EQ(b.items[2].ids, (Ids{101, 102, 0, 0, 0, 0, 0, 0}));
  for (const auto& it : b.items) {
    EXPECT_EQ(it.ids.size(), 8u);
    EXPECT_EQ(it.tokens.size(), 8u);
    EXPECT_EQ(it.offsets.size(), 8u);
    EXPECT_EQ(it.type_ids.size(), 8u);
  }
  EXPECT_TRUE(tok_->encode_batch({}).items.empty());
}

// --- loading from a model directory -----------------------------------------------------------

TEST_F(BertUncased, FromModelDirWithVocabTxt) {
  TempDir d;
  ASSERT_FALSE(d.path().empty());
  std::ifstream in(kVocabPath, std::ios::binary);
  std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  d.write("vocab.txt", content);
  // Hugging Face writes int(1e30) when a model declares no limit.
  d.write("tokenizer_config.json",
          R"({"do_lower_case": true, "model_max_length": 1000000000000000019884624838656})");
  auto t = Tokenizer::from_model_dir(d.path());
  EXPECT_EQ(t->model_max_length(), 512u);
  EXPECT_EQ(t->encode("Hello world").ids, (Ids{101, 7592, 2088, 102}));

  d.write("sentence_bert_config.json", R"({"max_seq_length": 256, "do_lower_case": false})");
  EXPECT_EQ(Tokenizer::from_model_dir(d.path())->model_max_length(), 256u);

  d.write("tokenizer_config.json", R"({"do_lower_case": false, "model_max_length": 128})");
  t = Tokenizer::from_model_dir(d.path());
  EXPECT_EQ(t->model_max_length(), 128u);  // min(128, 256)
  EXPECT_EQ(t->tokenize("Hello")[0].id, 100);

  // sentence-transformers' own do_lower_case lower-cases on top of a cased tokenizer.
  d.write("sentence_bert_config.json", R"({"max_seq_length": 256, "do_lower_case": true})");
  EXPECT_EQ(Tokenizer::from_model_dir(d.path())->tokenize("Hello")[0].id, 7592);
}

TEST_F(BertUncased, FromModelDirWithTokenizerJson) {
  TempDir d;
  ASSERT_FALSE(d.path().empty());
  nlohmann::json vocab = nlohmann::json::object();
  for (size_t i = 0; i < vocab_->size(); ++i) vocab[(*vocab_)[i]] = i;
  nlohmann::json tj = {
      {"version", "1.0"},
      {"normalizer",
       {{"type", "BertNormalizer"},
        {"clean_text", true},
        {"handle_chinese_chars", true},
        {"strip_accents", nullptr},
        {"lowercase", false}}},
      {"pre_tokenizer", {{"type", "BertPreTokenizer"}}},
      {"model",
       {{"type", "WordPiece"},
        {"unk_token", "[UNK]"},
        {"continuing_subword_prefix", "##"},
        {"max_input_chars_per_word", 100},
        {"vocab", vocab}}},
  };
  d.write("tokenizer.json", tj.dump());
  auto t = Tokenizer::from_model_dir(d.path());
  EXPECT_EQ(t->vocab_size(), 30522u);
  EXPECT_EQ(t->tokenize("Hello")[0].id, 100);  // lowercase: false
  EXPECT_EQ(t->tokenize("hello")[0].id, 7592);

  tj["normalizer"]["lowercase"] = true;
  d.write("tokenizer.json", tj.dump());
  EXPECT_EQ(Tokenizer::from_model_dir(d.path())->encode("Hello world").ids,
            (Ids{101, 7592, 2088, 102}));

  // tokenizer.json wins over vocab.txt; a non-WordPiece tokenizer.json falls back to vocab.txt.
  d.write("vocab.txt", "[PAD]\n[UNK]\n[CLS]\n[SEP]\nzebra\n");
  EXPECT_EQ(Tokenizer::from_model_dir(d.path())->vocab_size(), 30522u);
  d.write("tokenizer.json", R"({"model": {"type": "Unigram", "vocab": []}})");
  auto fb = Tokenizer::from_model_dir(d.path());
  EXPECT_EQ(fb->vocab_size(), 5u);
  EXPECT_EQ(fb->encode("Zebra").ids, (Ids{2, 4, 3}));
}

// --- errors (no vocabulary file needed) ------------------------------------------------------

TEST(WordPieceErrors, MissingVocabFile) {
  EXPECT_THROW(read_vocab_txt("/nonexistent/sieve/vocab.txt"), Error);
}

TEST(WordPieceErrors, EmptyVocab) {
  TempDir d;
  ASSERT_FALSE(d.path().empty());
  d.write("vocab.txt", "");
  EXPECT_THROW(read_vocab_txt(d.file("vocab.txt")), Error);
  EXPECT_THROW(make_wordpiece_tokenizer({}), Error);
  EXPECT_THROW(Tokenizer::from_model_dir(d.path()), Error);
}

TEST(WordPieceErrors, VocabWithoutUnk) {
  EXPECT_THROW(make_wordpiece_tokenizer({"[PAD]", "hello"}), Error);
}

TEST(WordPieceErrors, DirectoryWithoutTokenizer) {
  TempDir d;
  ASSERT_FALSE(d.path().empty());
  d.write("config.json", "{}");
  EXPECT_THROW(Tokenizer::from_model_dir(d.path()), Error);
  EXPECT_THROW(Tokenizer::from_model_dir(d.file("missing")), Error);
  d.write("tokenizer.json", "{not json");
  EXPECT_THROW(Tokenizer::from_model_dir(d.path()), Error);
}

TEST(WordPieceErrors, FramingNeedsClsSepAndPaddingNeedsPad) {
  auto t = make_wordpiece_tokenizer({"[UNK]", "a", "b"});
  EXPECT_THROW(t->encode("a"), Error);
  EncodeOptions o;
  o.add_special_tokens = false;
  EXPECT_EQ(t->encode("a b", o).ids, (Ids{1, 2}));
  EXPECT_THROW(t->encode_batch({"a", "a b"}, o), Error);
  EXPECT_EQ(t->encode_batch({"a", "b"}, o).seq_len, 1u);  // nothing to pad
}

TEST(WordPieceSmallVocab, CrlfVocabAndCustomTokens) {
  TempDir d;
  ASSERT_FALSE(d.path().empty());
  d.write("vocab.txt", "[PAD]\r\n[UNK]\r\n[CLS]\r\n[SEP]\r\nplay\r\n##ing\r\n##s\r\n");
  auto v = read_vocab_txt(d.file("vocab.txt"));
  ASSERT_EQ(v.size(), 7u);
  EXPECT_EQ(v[4], "play");
  auto t = make_wordpiece_tokenizer(v);
  EXPECT_EQ(t->encode("Playing plays").ids, (Ids{2, 4, 5, 4, 6, 3}));
  EXPECT_EQ(t->encode("Playings").ids, (Ids{2, 4, 5, 6, 3}));
  EXPECT_EQ(t->encode("player").ids, (Ids{2, 1, 3}));  // "##er" missing: whole word is [UNK]
}

}  // namespace
}  // namespace sieve
