// WordPiece vocabulary training. The merge sequences are worked out by hand below (BPE on words,
// "##" on non-initial characters, most frequent pair first, ties to the pair whose left token
// entered the vocabulary first); round trips use sieve's own WordPiece tokenizer, an independent
// consumer of the vocabulary, as the judge.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/file_util.h"
#include "sieve/error.h"
#include "sieve/tokenizer.h"
#include "support/test_util.h"
#include "text/wordpiece_trainer.h"

namespace sieve {
namespace {

using Merges = std::vector<std::pair<std::string, std::string>>;
using Strings = std::vector<std::string>;

std::string repeat(const std::string& word, int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s += word + " ";
  return s;
}

// Sennrich et al.'s example counts: low x5, lower x2, newest x6, widest x3.
std::string sennrich_text() {
  return repeat("low", 5) + repeat("lower", 2) + repeat("newest", 6) + repeat("widest", 3);
}

WordPieceVocab train_text(const std::string& text, WordPieceTrainerOptions opt) {
  WordCounter wc(opt);
  wc.add_text(text);
  return train_wordpiece(wc, opt);
}

Strings tokens_of(const Tokenizer& tok, const std::string& text) {
  Strings out;
  for (const auto& p : tok.tokenize(text)) out.push_back(p.token);
  return out;
}

const Strings kSpecials = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
const Strings kSennrichChars = {"d",   "e",   "i",   "l",   "n",   "o",   "r",   "s",   "t",   "w",
                                "##d", "##e", "##i", "##l", "##n", "##o", "##r", "##s", "##t", "##w"};

// Pair counts at the start: ##e ##s 9, ##s ##t 9, ##w ##e 8, l ##o 7, ##o ##w 7, n ##e 6, ##e ##w 6,
// w ##i 3, ##i ##d 3, ##d ##e 3, ##e ##r 2. Merging ##e+##s turns newest's ##w ##e into ##w ##es,
// so ##w ##e drops to 2; later ties go to the older left token (a character before a merged token,
// a word start before a "##" form).
TEST(WordPieceTrainer, SennrichMergesByHand) {
  WordPieceTrainerOptions opt;
  opt.vocab_size = 1000;
  WordPieceVocab v = train_text(sennrich_text(), opt);
  const Merges want = {{"##e", "##s"}, {"##es", "##t"}, {"l", "##o"},      {"lo", "##w"},
                       {"n", "##e"},   {"##w", "##est"}, {"ne", "##west"}, {"w", "##i"},
                       {"##d", "##est"}, {"wi", "##dest"}, {"##e", "##r"}, {"low", "##er"}};
  EXPECT_EQ(v.merges, want);
  Strings tokens = kSpecials;
  tokens.insert(tokens.end(), kSennrichChars.begin(), kSennrichChars.end());
  for (const char* t :
       {"##es", "##est", "lo", "low", "ne", "##west", "newest", "wi", "##dest", "widest", "##er", "lower"})
    tokens.push_back(t);
  EXPECT_EQ(v.tokens, tokens);  // merges ran out before 1000
  EXPECT_EQ(v.num_special, 5u);
  EXPECT_EQ(v.alphabet_size, 10u);
  EXPECT_EQ(v.char_tokens, 20u);
  EXPECT_EQ(v.distinct_words, 4u);
  EXPECT_EQ(v.words_counted, 16u);
}

// min_frequency 3: 'r' (seen twice) leaves the alphabet, so "lower" cannot be encoded and drops
// out of the counts (l ##o and ##o ##w fall to 5); merging stops before any pair seen < 3 times.
TEST(WordPieceTrainer, MinFrequencyDropsRareCharactersAndPairs) {
  WordPieceTrainerOptions opt;
  opt.vocab_size = 1000;
  opt.min_frequency = 3;
  WordPieceVocab v = train_text(sennrich_text(), opt);
  const Merges want = {{"##e", "##s"}, {"##es", "##t"}, {"n", "##e"}, {"##w", "##est"}, {"ne", "##west"},
                       {"l", "##o"},   {"lo", "##w"},   {"w", "##i"}, {"##d", "##est"}, {"wi", "##dest"}};
  EXPECT_EQ(v.merges, want);
  EXPECT_EQ(v.alphabet_size, 9u);
  EXPECT_EQ(v.unencodable_words, 1u);
  EXPECT_EQ(v.tokens.size(), 5u + 18u + 10u);
  for (const auto& t : v.tokens) EXPECT_EQ(t.find('r'), std::string::npos) << t;
}

TEST(WordPieceTrainer, VocabSizeExactWhenMergesRemain) {
  WordPieceTrainerOptions opt;
  opt.vocab_size = 30;  // 25 specials + characters, then the first five merges
  WordPieceVocab v = train_text(sennrich_text(), opt);
  ASSERT_EQ(v.tokens.size(), 30u);
  EXPECT_EQ(Strings(v.tokens.begin() + 25, v.tokens.end()), (Strings{"##es", "##est", "lo", "low", "ne"}));

  opt.vocab_size = 25;  // room for the characters only
  v = train_text(sennrich_text(), opt);
  EXPECT_EQ(v.tokens.size(), 25u);
  EXPECT_TRUE(v.merges.empty());

  opt.vocab_size = 24;
  test::expect_error([&] { train_text(sennrich_text(), opt); }, "at least 25");
}

TEST(WordPieceTrainer, SpecialTokenIds) {
  WordPieceVocab v = train_text(sennrich_text(), {});
  auto tok = make_wordpiece_tokenizer(v.tokens);
  SpecialTokens sp = tok->special_tokens();
  EXPECT_EQ(sp.pad, 0);
  EXPECT_EQ(sp.unk, 1);
  EXPECT_EQ(sp.cls, 2);
  EXPECT_EQ(sp.sep, 3);
  EXPECT_EQ(sp.mask, 4);

  WordPieceTrainerOptions opt;
  opt.num_unused = 3;
  v = train_text(sennrich_text(), opt);
  EXPECT_EQ(Strings(v.tokens.begin(), v.tokens.begin() + 8),
            (Strings{"[PAD]", "[unused0]", "[unused1]", "[unused2]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"}));
  EXPECT_EQ(v.num_special, 8u);
}

// Sentences from a small word list with skewed frequencies, plus punctuation.
std::vector<std::string> synthetic_corpus(size_t lines, uint32_t seed) {
  const Strings words = {"the",    "a",       "search", "engine", "finds", "semantic", "vectors", "quickly",
                         "over",   "indexes", "of",     "brown",  "foxes", "jumping",  "lazy",    "dogs",
                         "query",  "results", "ranked", "by",     "cosine", "distance", "with",    "tokens"};
  std::mt19937 rng(seed);
  std::vector<double> weights;
  for (size_t i = 0; i < words.size(); ++i) weights.push_back(1.0 / double(i + 1));
  std::discrete_distribution<size_t> pick(weights.begin(), weights.end());
  std::vector<std::string> out;
  for (size_t l = 0; l < lines; ++l) {
    std::string s;
    for (int w = 0; w < 8; ++w) s += (w ? " " : "") + words[pick(rng)];
    s += l % 3 == 0 ? "'s. " : (l % 3 == 1 ? "!" : ", ok?");
    out.push_back(s);
  }
  return out;
}

TEST(WordPieceTrainer, Deterministic) {
  std::vector<std::string> lines = synthetic_corpus(500, 7);
  WordPieceTrainerOptions opt;
  opt.vocab_size = 150;
  WordCounter a(opt), b(opt), c(opt);
  for (const auto& l : lines) a.add_text(l);
  for (const auto& l : lines) b.add_text(l);
  for (auto it = lines.rbegin(); it != lines.rend(); ++it) c.add_text(*it);  // other order, same counts
  WordPieceVocab va = train_wordpiece(a, opt), vb = train_wordpiece(b, opt), vc = train_wordpiece(c, opt);
  EXPECT_EQ(va.tokens.size(), 150u);
  EXPECT_EQ(va.tokens, vb.tokens);
  EXPECT_EQ(va.merges, vb.merges);
  EXPECT_EQ(va.tokens, vc.tokens);
}

TEST(WordPieceTrainer, RoundTripThroughTokenizer) {
  std::vector<std::string> lines = synthetic_corpus(2000, 11);
  WordPieceTrainerOptions opt;
  opt.vocab_size = 150;
  WordCounter wc(opt);
  for (const auto& l : lines) wc.add_text(l);
  WordPieceVocab v = train_wordpiece(wc, opt);
  ASSERT_EQ(v.tokens.size(), 150u);
  auto tok = make_wordpiece_tokenizer(v.tokens);
  const int32_t unk = tok->special_tokens().unk;
  // Held out: new words and inflections, built only from characters of the corpus.
  const std::string held_out = "The Engine's quickest semantics? ranking dogs, jumped foxes!";
  auto pieces = tok->tokenize(held_out);
  ASSERT_FALSE(pieces.empty());
  for (const auto& p : pieces) EXPECT_NE(p.id, unk) << p.token;
  // Pieces of one word concatenate back to the lower-cased word.
  std::string joined;
  for (const auto& p : pieces) joined += p.token.rfind("##", 0) == 0 ? p.token.substr(2) : " " + p.token;
  EXPECT_EQ(joined, " the engine ' s quickest semantics ? ranking dogs , jumped foxes !");
  // The most frequent words of the corpus are whole tokens.
  EXPECT_EQ(tokens_of(*tok, "the search engine"), (Strings{"the", "search", "engine"}));
  // A word with a character never seen is still one [UNK] (every Latin letter occurs above).
  EXPECT_EQ(tok->tokenize("s\xC3\xB8ren")[0].id, unk);
}

TEST(WordPieceTrainer, UncasedFoldsCaseAndAccents) {
  WordPieceTrainerOptions opt;
  opt.min_frequency = 1;
  opt.vocab_size = 100;
  WordPieceVocab v = train_text("Café café CAFÉ cafe", opt);
  auto tok = make_wordpiece_tokenizer(v.tokens);
  EXPECT_EQ(tokens_of(*tok, "Café"), (Strings{"cafe"}));
  EXPECT_EQ(tokens_of(*tok, "CAFÉ"), (Strings{"cafe"}));
  for (size_t i = v.num_special; i < v.tokens.size(); ++i) {
    const std::string& t = v.tokens[i];
    EXPECT_EQ(t.find("\xC3\xA9"), std::string::npos) << t;  // no é
    EXPECT_EQ(t.find('C'), std::string::npos) << t;
  }

  opt.lowercase = false;
  v = train_text("Café Café", opt);
  WordPieceOptions cased;
  cased.do_lower_case = false;
  tok = make_wordpiece_tokenizer(v.tokens, cased);
  EXPECT_EQ(tokens_of(*tok, "Café"), (Strings{"Café"}));
}

// Train until no pair is left (every word one token), then tokenize the same text: the tokenizer
// returns each of its words whole, so its tokens must be exactly the trainer's word counts.
void expect_same_words_as_tokenizer(const std::string& text, bool lowercase) {
  WordPieceTrainerOptions opt;
  opt.lowercase = lowercase;
  opt.min_frequency = 1;
  opt.limit_alphabet = 0;
  opt.vocab_size = 100000;
  WordCounter wc(opt);
  wc.add_text(text);
  WordPieceVocab v = train_wordpiece(wc, opt);
  WordPieceOptions wo;
  wo.do_lower_case = lowercase;
  auto tok = make_wordpiece_tokenizer(v.tokens, wo);
  std::map<std::string, uint64_t> from_tokenizer;
  for (const auto& p : tok->tokenize(text)) {
    EXPECT_NE(p.token.rfind("##", 0), 0u) << "word split into pieces: " << p.token;
    EXPECT_NE(p.token, "[UNK]");
    ++from_tokenizer[p.token];
  }
  std::map<std::string, uint64_t> from_trainer(wc.counts().begin(), wc.counts().end());
  EXPECT_EQ(from_trainer, from_tokenizer);
}

TEST(WordPieceTrainer, PreTokenizationMatchesTokenizer) {
  const std::string text =
      "Hello, World! \xC3\x87" "a va? \xE6\x9D\xB1\xE4\xBA\xAC\xE3\x82\xBF\xE3\x83\xAF\xE3\x83\xBC don't "
      "x\xC2\xA0y foo\tbar e\xCC\x81te \xC4\xB0stanbul \xC7\x85" "emal \xE1\xBF\xAFx a\xE2\x80\x8B" "b 3.14 "
      "\xC3\x85NGSTR\xC3\x96M stra\xC3\x9F" "e a[b]c \x01z $5 x+y ~tilde~ \xE2\x80\x9Cquoted\xE2\x80\x9D "
      "\xEF\xAC\x81ne \xD0\x9C\xD0\xBE\xD1\x81\xD0\xBA\xD0\xB2\xD0\xB0 hello HELLO";
  expect_same_words_as_tokenizer(text, true);
  expect_same_words_as_tokenizer(text, false);
}

TEST(WordPieceTrainer, WordCounterLimits) {
  WordPieceTrainerOptions opt;
  opt.max_words = 2;
  WordCounter wc(opt);
  wc.add_text("a b c a c");
  EXPECT_EQ(wc.counts().size(), 2u);
  EXPECT_EQ(wc.counts().at("a"), 2u);
  EXPECT_EQ(wc.counts().at("b"), 1u);
  EXPECT_EQ(wc.words_counted(), 3u);
  EXPECT_EQ(wc.words_skipped(), 2u);

  WordCounter lengths{WordPieceTrainerOptions{}};
  lengths.add_text(std::string(100, 'x') + " " + std::string(101, 'y'));  // the tokenizer's limit is 100
  EXPECT_EQ(lengths.counts().size(), 1u);
  EXPECT_EQ(lengths.counts().count(std::string(100, 'x')), 1u);
  EXPECT_EQ(lengths.words_skipped(), 1u);
}

TEST(WordPieceTrainer, FilesAndErrors) {
  std::string dir = test::make_temp_dir("wp_trainer");
  {
    std::ofstream f(dir + "/a.txt");
    f << repeat("low", 5) << "\n" << repeat("lower", 2) << "\r\n";
    std::ofstream g(dir + "/b.txt");
    g << repeat("newest", 6) << "\n\n" << repeat("widest", 3);  // no final newline
  }
  WordPieceTrainerOptions opt;
  opt.vocab_size = 1000;
  WordPieceVocab v = train_wordpiece_files({dir + "/a.txt", dir + "/b.txt"}, opt);
  EXPECT_EQ(v.tokens, train_text(sennrich_text(), opt).tokens);
  EXPECT_EQ(v.words_counted, 16u);

  test::expect_error([&] { train_wordpiece_files({dir + "/a.txt", dir + "/missing.txt"}, opt); },
                     dir + "/missing.txt");
  {
    std::ofstream e(dir + "/empty.txt");
    e << " \n\t\n";
  }
  test::expect_error([&] { train_wordpiece_files({dir + "/empty.txt"}, opt); }, "no words");
  EXPECT_EQ(vocab_txt({"[PAD]", "a", "##b"}), "[PAD]\na\n##b\n");
}

TEST(WordPieceTrainer, Cli) {
  if (!is_file(test::cli_path())) GTEST_SKIP() << "the sieve executable is not built: " << test::cli_path();
  std::string dir = test::make_temp_dir("wp_trainer_cli");
  {
    std::ofstream f(dir + "/corpus.txt");
    f << sennrich_text() << "\n";
  }
  const std::string cli = test::cli_path();
  auto r = test::run_command(cli + " vocab train --text " + dir + "/corpus.txt --out " + dir +
                             "/vocab.txt --size 30 2>/dev/null");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["vocab_size"], 30);
  EXPECT_EQ(j["distinct_words"], 4);
  EXPECT_EQ(j["words_counted"], 16);
  Strings vocab = read_vocab_txt(dir + "/vocab.txt");
  ASSERT_EQ(vocab.size(), 30u);
  EXPECT_EQ(vocab[0], "[PAD]");
  EXPECT_EQ(vocab[29], "ne");

  auto help = test::run_command(cli + " vocab train --help 2>&1");
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("--text"), std::string::npos) << help.out;
  EXPECT_NE(help.out.find("--min-frequency"), std::string::npos) << help.out;

  auto missing =
      test::run_command(cli + " vocab train --text " + dir + "/nope.txt --out " + dir + "/v2.txt 2>&1");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.out.find(dir + "/nope.txt"), std::string::npos) << missing.out;
  EXPECT_FALSE(is_file(dir + "/v2.txt"));

  auto small = test::run_command(cli + " vocab train --text " + dir + "/corpus.txt --out " + dir +
                                 "/v3.txt --size 10 2>&1");
  EXPECT_EQ(small.exit_code, 1);
  EXPECT_NE(small.out.find("at least 25"), std::string::npos) << small.out;
}

}  // namespace
}  // namespace sieve
