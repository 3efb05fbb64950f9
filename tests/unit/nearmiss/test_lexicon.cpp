// WordNet lexicon: checked against facts of WordNet 3.0 found independently by grepping Debian's
// wordnet-base files in /usr/share/wordnet (the command is in each comment) and against common
// English inflections; plus a tiny fake WordNet written here for the error paths.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "core/file_util.h"
#include "nearmiss/lexicon.h"
#include "sieve/error.h"
#include "support/test_util.h"
#include "unit/nearmiss/wordnet_test.h"

namespace sieve::nearmiss {
namespace {

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

class LexiconTest : public test::WordNetTest {};

TEST_F(LexiconTest, CountsMatchWordNet30Statistics) {
  // wnstats(7WN) for WordNet 3.0: unique strings / synsets 117798/82115 nouns, 11529/13767 verbs,
  // 21479/18156 adjectives, 4481/3621 adverbs; also `grep -vc '^  ' index.noun data.noun` etc.
  EXPECT_EQ(lx().lemma_count(Pos::Noun), 117798u);
  EXPECT_EQ(lx().synset_count(Pos::Noun), 82115u);
  EXPECT_EQ(lx().lemma_count(Pos::Verb), 11529u);
  EXPECT_EQ(lx().synset_count(Pos::Verb), 13767u);
  EXPECT_EQ(lx().lemma_count(Pos::Adj), 21479u);
  EXPECT_EQ(lx().synset_count(Pos::Adj), 18156u);
  EXPECT_EQ(lx().lemma_count(Pos::Adv), 4481u);
  EXPECT_EQ(lx().synset_count(Pos::Adv), 3621u);
}

TEST_F(LexiconTest, Has) {
  // grep '^dog n' index.noun; grep '^ice_cream n' index.noun; grep -c '^dog r' index.adv -> 0
  EXPECT_TRUE(lx().has("dog", Pos::Noun));
  EXPECT_TRUE(lx().has("Dog", Pos::Noun));
  EXPECT_TRUE(lx().has("ice cream", Pos::Noun));
  EXPECT_TRUE(lx().has("ice_cream", Pos::Noun));
  EXPECT_FALSE(lx().has("dog", Pos::Adv));
  EXPECT_FALSE(lx().has("dogs", Pos::Noun));  // an inflection, not a lemma
  EXPECT_FALSE(lx().has("xyzzyq", Pos::Noun));
  EXPECT_FALSE(lx().has("", Pos::Noun));
}

TEST_F(LexiconTest, BaseForms) {
  // verb.exc has "bitten bite"; noun.exc has "men man" (and "men" is itself a noun lemma);
  // adj.exc has "better good well".
  EXPECT_EQ(lx().base_forms("bitten", Pos::Verb), (std::vector<std::string>{"bite"}));
  auto men = lx().base_forms("men", Pos::Noun);
  ASSERT_FALSE(men.empty());
  EXPECT_EQ(men.front(), "man");  // exception list first
  EXPECT_TRUE(contains(lx().base_forms("better", Pos::Adj), "good"));
  // Detachment rules: s ->, ing -> (after doubling via verb.exc: running -> run), ies -> y.
  EXPECT_EQ(lx().base_forms("dogs", Pos::Noun), (std::vector<std::string>{"dog"}));
  EXPECT_TRUE(contains(lx().base_forms("running", Pos::Verb), "run"));
  EXPECT_TRUE(contains(lx().base_forms("cities", Pos::Noun), "city"));
  EXPECT_TRUE(contains(lx().base_forms("boxes", Pos::Noun), "box"));
  EXPECT_TRUE(contains(lx().base_forms("making", Pos::Verb), "make"));
  EXPECT_TRUE(contains(lx().base_forms("Bigger", Pos::Adj), "big"));
  // A collocation with one inflected word: index.noun has attorney_general.
  EXPECT_TRUE(contains(lx().base_forms("attorneys general", Pos::Noun), "attorney general"));
  EXPECT_TRUE(lx().base_forms("xyzzyqs", Pos::Noun).empty());
  EXPECT_TRUE(lx().base_forms("bitten", Pos::Adv).empty());
}

TEST_F(LexiconTest, PartsOfSpeech) {
  // grep -E '^run [nv] ' index.noun index.verb; grep '^quickly ' index.* -> index.adv only
  auto run = lx().parts_of_speech("run");
  EXPECT_TRUE(std::find(run.begin(), run.end(), Pos::Noun) != run.end());
  EXPECT_TRUE(std::find(run.begin(), run.end(), Pos::Verb) != run.end());
  EXPECT_EQ(lx().parts_of_speech("quickly"), (std::vector<Pos>{Pos::Adv}));
  auto ran = lx().parts_of_speech("ran");  // only the past of "run" (verb.exc "ran run")
  EXPECT_EQ(ran, (std::vector<Pos>{Pos::Verb}));
  EXPECT_TRUE(lx().parts_of_speech("xyzzyq").empty());
}

TEST_F(LexiconTest, Synonyms) {
  // index.noun: "car n 5 ... 02958343 ..."; data.noun 02958343: "car 0 auto 0 automobile 0
  // machine 1 motorcar 0".
  EXPECT_EQ(lx().synonyms("car", Pos::Noun),
            (std::vector<std::string>{"auto", "automobile", "machine", "motorcar"}));
  EXPECT_FALSE(contains(lx().synonyms("car", Pos::Noun, 5), "car"));
  EXPECT_TRUE(lx().synonyms("xyzzyq", Pos::Noun).empty());
}

TEST_F(LexiconTest, Antonyms) {
  // index.adj: hot's sense 1 is 01247240; data.adj 01247240 has "! 01251128 a 0101" and 01251128
  // is "cold". left's sense 1 02032954 has "! 02031987 a 0101" = "right".
  auto hot = lx().antonyms("hot", Pos::Adj);
  ASSERT_FALSE(hot.empty());
  EXPECT_EQ(hot.front(), "cold");
  EXPECT_TRUE(contains(lx().antonyms("left", Pos::Adj), "right"));
  EXPECT_TRUE(contains(lx().antonyms("buy", Pos::Verb), "sell"));
  EXPECT_TRUE(contains(lx().antonyms("day", Pos::Noun), "night"));
  EXPECT_TRUE(contains(lx().antonyms("Alive", Pos::Adj), "dead"));
  // damp (index.adj: only 02548821, a satellite 's') has no '!' of its own; its '&' head
  // 02547318 is wet's sense 1, whose antonym is "dry".
  EXPECT_TRUE(lx().antonyms("damp", Pos::Adj).empty());
  EXPECT_EQ(lx().antonyms("damp", Pos::Adj, true), (std::vector<std::string>{"dry"}));
  // Limiting senses limits the indirect list; direct ones come first.
  auto hot_indirect = lx().antonyms("hot", Pos::Adj, true, 2);
  ASSERT_FALSE(hot_indirect.empty());
  EXPECT_EQ(hot_indirect.front(), "cold");
  EXPECT_LT(hot_indirect.size(), lx().antonyms("hot", Pos::Adj, true).size());
  EXPECT_TRUE(lx().antonyms("xyzzyq", Pos::Adj).empty());
}

TEST_F(LexiconTest, IrregularVerbs) {
  struct Row {
    const char* base;
    const char* past;
    const char* participle;
  };
  // Common English irregular verbs (forms as in any English grammar).
  const Row rows[] = {{"be", "was", "been"},       {"have", "had", "had"},        {"do", "did", "done"},
                      {"go", "went", "gone"},       {"bite", "bit", "bitten"},     {"see", "saw", "seen"},
                      {"eat", "ate", "eaten"},      {"give", "gave", "given"},     {"take", "took", "taken"},
                      {"run", "ran", "run"},        {"sit", "sat", "sat"},         {"write", "wrote", "written"},
                      {"speak", "spoke", "spoken"}, {"break", "broke", "broken"},  {"choose", "chose", "chosen"},
                      {"fall", "fell", "fallen"},   {"fly", "flew", "flown"},      {"know", "knew", "known"},
                      {"ride", "rode", "ridden"},   {"rise", "rose", "risen"},     {"drive", "drove", "driven"},
                      {"sing", "sang", "sung"},     {"swim", "swam", "swum"},      {"come", "came", "come"},
                      {"become", "became", "become"}, {"drink", "drank", "drunk"}, {"begin", "began", "begun"},
                      {"make", "made", "made"},     {"win", "won", "won"},         {"put", "put", "put"},
                      {"cut", "cut", "cut"},        {"beat", "beat", "beaten"},    {"lie", "lay", "lain"},
                      {"lay", "laid", "laid"},      {"get", "got", "gotten"},      {"show", "showed", "shown"},
                      {"learn", "learned", "learned"}, {"quit", "quit", "quit"}};
  for (const Row& r : rows) {
    EXPECT_EQ(lx().verb_past(r.base), r.past) << r.base;
    EXPECT_EQ(lx().verb_past_participle(r.base), r.participle) << r.base;
  }
  EXPECT_EQ(lx().verb_third_person("be"), "is");
  EXPECT_EQ(lx().verb_third_person("have"), "has");
  EXPECT_EQ(lx().verb_third_person("do"), "does");
  EXPECT_EQ(lx().verb_third_person("go"), "goes");
  EXPECT_EQ(lx().verb_present_participle("be"), "being");
  EXPECT_EQ(lx().verb_present_participle("run"), "running");
  EXPECT_EQ(lx().verb_present_participle("lie"), "lying");
  EXPECT_EQ(lx().verb_present_participle("see"), "seeing");
}

TEST_F(LexiconTest, RegularVerbs) {
  EXPECT_EQ(lx().verb_past("stop"), "stopped");
  EXPECT_EQ(lx().verb_past_participle("stop"), "stopped");
  EXPECT_EQ(lx().verb_present_participle("stop"), "stopping");
  EXPECT_EQ(lx().verb_past("blog"), "blogged");  // index.verb has blog but verb.exc no "blogged": the CVC rule
  EXPECT_EQ(lx().verb_past("visit"), "visited");  // two syllables: no doubling
  EXPECT_EQ(lx().verb_past("open"), "opened");
  EXPECT_EQ(lx().verb_past("fix"), "fixed");
  EXPECT_EQ(lx().verb_past("rain"), "rained");
  EXPECT_EQ(lx().verb_past("carry"), "carried");
  EXPECT_EQ(lx().verb_past("play"), "played");
  EXPECT_EQ(lx().verb_past("like"), "liked");
  EXPECT_EQ(lx().verb_third_person("carry"), "carries");
  EXPECT_EQ(lx().verb_third_person("bite"), "bites");
  EXPECT_EQ(lx().verb_third_person("watch"), "watches");
  EXPECT_EQ(lx().verb_third_person("play"), "plays");
  EXPECT_EQ(lx().verb_third_person("quiz"), "quizzes");  // verb.exc "quizzes quiz"
  EXPECT_EQ(lx().verb_present_participle("make"), "making");
  EXPECT_EQ(lx().verb_present_participle("bite"), "biting");
  EXPECT_EQ(lx().verb_present_participle("agree"), "agreeing");
  EXPECT_EQ(lx().verb_present_participle("die"), "dying");
  EXPECT_EQ(lx().verb_present_participle("play"), "playing");
  // Multiword verbs inflect their first word; case and blanks are normalised.
  EXPECT_EQ(lx().verb_past("take off"), "took off");
  EXPECT_EQ(lx().verb_past_participle("give_up"), "given up");
  EXPECT_EQ(lx().verb_past(" Bite "), "bit");
  EXPECT_EQ(lx().verb_past(""), "");
}

TEST_F(LexiconTest, NounPlurals) {
  // noun.exc: "children child", "mice mouse", "teeth tooth", "geese goose", "oxen ox", "men man",
  // "leaves leaf leave", "knives knife", "data datum"; no "women woman" (morphy's men -> man rule).
  const std::pair<const char*, const char*> rows[] = {
      {"child", "children"}, {"box", "boxes"},   {"man", "men"},       {"woman", "women"},
      {"fireman", "firemen"}, {"human", "humans"}, {"mouse", "mice"},   {"tooth", "teeth"},
      {"goose", "geese"},    {"ox", "oxen"},      {"leaf", "leaves"},  {"knife", "knives"},
      {"datum", "data"},     {"city", "cities"},  {"day", "days"},     {"church", "churches"},
      {"dog", "dogs"},       {"sheep", "sheep"},  {"brother", "brothers"}, {"potato", "potatoes"},
      {"cry", "cries"},      {"ice cream", "ice creams"}};
  for (const auto& [base, plural] : rows) EXPECT_EQ(lx().noun_plural(base), plural) << base;
  EXPECT_EQ(lx().noun_plural(""), "");
}

TEST_F(LexiconTest, ExamplesAndGlosses) {
  // data.verb 00002942: "breathe excessively hard and fast; "The mountain climber started to
  // hyperventilate"" (grep -c 'mountain climber started to hyperventilate' data.verb -> 1).
  auto examples = lx().example_sentences();
  ASSERT_GT(examples.size(), 40000u);
  EXPECT_TRUE(contains(examples, "The mountain climber started to hyperventilate"));
  for (const auto& e : examples) {
    ASSERT_FALSE(e.empty());
    ASSERT_EQ(e.find('"'), std::string::npos) << e;
    ASSERT_NE(e.front(), ' ') << e;
  }
  auto glosses = lx().glosses();
  EXPECT_GT(glosses.size(), 100000u);
  EXPECT_TRUE(contains(glosses, "breathe excessively hard and fast"));
  // data.noun's first synset (00001740, "entity") comes first.
  EXPECT_EQ(glosses.front().rfind("that which is perceived or known or inferred", 0), 0u) << glosses.front();
  EXPECT_EQ(lx().example_sentences(10).size(), 10u);
  EXPECT_EQ(lx().glosses(3).size(), 3u);
  EXPECT_EQ(lx().example_sentences(10)[9], examples[9]);
}

// ---- a fake WordNet for loading and error paths ----------------------------------------------

const char* kLicense = "  1 test license line  \n";

// Builds a data file from lines whose "$0", "$1", ... stand for the offsets of lines 0, 1, ...;
// each line gets its byte offset in front, as in wndb(5WN). Returns the offsets too.
std::string build_data(const std::vector<std::string>& lines, std::vector<std::string>* offsets) {
  auto subst = [](std::string s, const std::vector<std::string>& offs) {
    for (size_t i = 0; i < offs.size(); ++i) {
      std::string key = "$" + std::to_string(i);
      for (size_t at; (at = s.find(key)) != std::string::npos;) s.replace(at, key.size(), offs[i]);
    }
    return s;
  };
  std::vector<std::string> offs(lines.size(), "00000000");
  for (int pass = 0; pass < 2; ++pass) {
    size_t pos = std::string(kLicense).size();
    std::vector<std::string> next;
    for (const auto& l : lines) {
      char buf[16];
      std::snprintf(buf, sizeof buf, "%08zu", pos);
      next.push_back(buf);
      pos += 9 + subst(l, offs).size() + 1;
    }
    offs = next;
  }
  std::string out = kLicense;
  for (size_t i = 0; i < lines.size(); ++i) out += offs[i] + " " + subst(lines[i], offs) + "\n";
  if (offsets != nullptr) *offsets = offs;
  return out;
}

struct FakeWordNet {
  std::vector<std::string> adj_lines = {
      R"(00 a 01 hot 0 001 ! $1 a 0101 | extended meaning; of high temperature; "a hot day"; "hot; and spicy"  )",
      R"(00 a 01 cold(p) 0 001 ! $0 a 0101 | of low temperature  )"};
  std::string adj_index = "cold a 1 1 ! 1 0 $1  \nhot a 1 1 ! 1 0 $0  \n";
  std::string adj_exc = "colder cold\n";

  std::string write() const {
    std::string dir = test::make_temp_dir("wordnet");
    auto put = [&](const std::string& name, const std::string& content) {
      std::ofstream(dir + "/" + name, std::ios::binary) << content;
    };
    for (const char* p : {"noun", "verb", "adv"}) {
      put(std::string("data.") + p, kLicense);
      put(std::string("index.") + p, kLicense);
      put(std::string(p) + ".exc", "");
    }
    std::vector<std::string> offs;
    put("data.adj", build_data(adj_lines, &offs));
    std::string index = adj_index;
    for (size_t i = 0; i < offs.size(); ++i)
      for (size_t at; (at = index.find("$" + std::to_string(i))) != std::string::npos;) index.replace(at, 2, offs[i]);
    put("index.adj", kLicense + index);
    put("adj.exc", adj_exc);
    return dir;
  }
};

TEST(LexiconFake, LoadsATinyWordNet) {
  std::string dir = FakeWordNet().write();
  ASSERT_TRUE(Lexicon::available(dir));
  auto lx = Lexicon::load(dir);
  EXPECT_EQ(lx->lemma_count(Pos::Adj), 2u);
  EXPECT_EQ(lx->synset_count(Pos::Adj), 2u);
  EXPECT_TRUE(lx->has("cold", Pos::Adj));  // the "(p)" marker is not part of the word
  EXPECT_EQ(lx->antonyms("hot", Pos::Adj), (std::vector<std::string>{"cold"}));
  EXPECT_EQ(lx->antonyms("cold", Pos::Adj), (std::vector<std::string>{"hot"}));
  EXPECT_EQ(lx->base_forms("colder", Pos::Adj), (std::vector<std::string>{"cold"}));
  EXPECT_EQ(lx->base_forms("hotter", Pos::Adj), (std::vector<std::string>{}));  // no exc entry, "hott"
  EXPECT_EQ(lx->example_sentences(), (std::vector<std::string>{"a hot day", "hot; and spicy"}));
  EXPECT_EQ(lx->glosses(),
            (std::vector<std::string>{"extended meaning; of high temperature", "of low temperature"}));
  EXPECT_FALSE(lx->has("hot", Pos::Noun));
}

TEST(LexiconFake, MissingFilesAreNamed) {
  std::string empty = test::make_temp_dir("wordnet_empty");
  EXPECT_FALSE(Lexicon::available(empty));
  std::string msg = test::error_of([&] { Lexicon::load(empty); });
  EXPECT_NE(msg.find(empty + "/index.noun"), std::string::npos) << msg;
  EXPECT_NE(msg.find("apt install wordnet-base"), std::string::npos) << msg;

  std::string dir = FakeWordNet().write();
  std::remove((dir + "/verb.exc").c_str());
  EXPECT_FALSE(Lexicon::available(dir));
  test::expect_error([&] { Lexicon::load(dir); }, dir + "/verb.exc");
}

TEST(LexiconFake, CorruptLinesNameFileAndLine) {
  struct Case {
    const char* what;
    FakeWordNet fake;
    std::string needle;
  };
  std::vector<Case> cases;
  FakeWordNet f;
  f.adj_lines[1] = R"(00 a 01 cold 0 0x1 ! $0 a 0101 | of low temperature  )";
  cases.push_back({"bad p_cnt", f, "data.adj:3: bad p_cnt '0x1'"});
  f = FakeWordNet();
  f.adj_lines[1] = R"(00 a 01 cold 0 001 ! $0 a 0101 of low temperature  )";
  cases.push_back({"no '|'", f, "data.adj:3: expected '|' before the gloss"});
  f = FakeWordNet();
  f.adj_lines[0] = R"(00 n 01 hot 0 001 ! $1 a 0101 | hot  )";
  cases.push_back({"noun in data.adj", f, "data.adj:2: ss_type 'n' does not belong"});
  f = FakeWordNet();
  f.adj_lines[0] = R"(00 a 01 hot 0 002 ! $1 a 0101 | hot  )";
  cases.push_back({"p_cnt larger than the pointers", f, "data.adj:2: unknown pointer symbol '|'"});
  f = FakeWordNet();
  f.adj_lines[1] = R"(00 a 01 cold 0 001 ! 00000099 a 0101 | cold  )";
  cases.push_back({"dangling pointer", f, "data.adj:3: pointer '!' to"});
  f = FakeWordNet();
  f.adj_lines[1] = R"(00 a 01 cold 0 001 ! $0 a 0102 | cold  )";
  cases.push_back({"pointer to a missing word", f, "data.adj:3: pointer '!'"});
  f = FakeWordNet();
  f.adj_index = "cold a 1 1 ! 1 0 $1  \nhot a 1 1 ! 1 0 00000001  \n";
  cases.push_back({"index offset without synset", f, "index.adj:3: synset_offset 1 of 'hot'"});
  f = FakeWordNet();
  f.adj_index = "cold a 2 1 ! 2 0 $1  \nhot a 1 1 ! 1 0 $0  \n";
  cases.push_back({"fewer offsets than synset_cnt", f, "index.adj:2: the line ends where synset_offset"});
  f = FakeWordNet();
  f.adj_exc = "colder\n";
  cases.push_back({"exception without base", f, "adj.exc:1: an exception without a base form"});
  for (const Case& c : cases) {
    std::string dir = c.fake.write();
    std::string msg = test::error_of([&] { Lexicon::load(dir); });
    EXPECT_NE(msg.find(dir + "/" + c.needle), std::string::npos) << c.what << ": " << msg;
  }

  // A CRLF conversion moves every later synset away from its offset.
  std::string dir = FakeWordNet().write();
  std::string data = read_file(dir + "/data.adj");
  size_t second_line_end = data.find('\n', std::string(kLicense).size());
  data.insert(second_line_end, "\r");
  std::ofstream(dir + "/data.adj", std::ios::binary) << data;
  test::expect_error([&] { Lexicon::load(dir); }, dir + "/data.adj:3: synset_offset");
}

}  // namespace
}  // namespace sieve::nearmiss
