// Sentence layer and near-miss perturbations: hand-written expectations, garbage inputs, the
// token-level edit classifier on hand-made pairs, and a quality floor over WordNet's own example
// sentences (the measure: the diff is exactly the intended edit).
#include <gtest/gtest.h>

#include <cstdlib>
#include <iostream>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "nearmiss/lexicon.h"
#include "nearmiss/perturb.h"
#include "nearmiss/sentence.h"
#include "sieve/error.h"
#include "unit/nearmiss/wordnet_test.h"

namespace sieve::nearmiss {
namespace {

// ---- tests that need no WordNet ----------------------------------------------------------------

TEST(Sentence, TokenizeRoundTripsExactly) {
  for (const std::string text : {"The dog bit the man.", "  He doesn't like tea!  ", "\"Can't\" (won't) stop, ok?",
                                 "a red car and a blue house", "", "日本語のテキスト", "it's the dogs' bone"}) {
    EXPECT_EQ(detokenize(tokenize(text)), text);
  }
}

TEST(Sentence, TokenizeSplitsPunctuationAndClitics) {
  Sentence s = tokenize("He doesn't like (hot) tea, can't he?");
  std::vector<std::string> words;
  for (const auto& t : s.tokens) words.push_back(t.text);
  std::vector<std::string> expected = {"He", "does", "n't", "like", "(", "hot", ")", "tea", ",", "ca", "n't", "he", "?"};
  EXPECT_EQ(words, expected);
  EXPECT_EQ(s.tokens[2].space_before, "");
  EXPECT_EQ(s.tokens[3].space_before, " ");
}

TEST(Perturb, KindNames) {
  for (Kind k : {Kind::Negation, Kind::RoleSwap, Kind::BindingSwap, Kind::SpatialFlip, Kind::Antonym, Kind::Synonym,
                 Kind::Passive, Kind::Contraction, Kind::Coordination, Kind::Possessive, Kind::AdverbMove,
                 Kind::QuestionNegation, Kind::WhSwap, Kind::QuestionRoleSwap, Kind::NumberChange})
    EXPECT_EQ(kind_from_name(kind_name(k)), k);
  for (Kind k : {Kind::QuestionNegation, Kind::WhSwap, Kind::QuestionRoleSwap, Kind::NumberChange})
    EXPECT_FALSE(is_positive(k)) << kind_name(k);
  EXPECT_STREQ(kind_name(Kind::RoleSwap), "role_swap");
  EXPECT_STREQ(kind_name(Kind::SpatialFlip), "spatial_flip");
  EXPECT_STREQ(kind_name(Kind::Contraction), "contraction");
  EXPECT_STREQ(kind_name(Kind::Coordination), "coordination");
  EXPECT_STREQ(kind_name(Kind::Possessive), "possessive");
  EXPECT_STREQ(kind_name(Kind::AdverbMove), "adverb_move");
  EXPECT_STREQ(kind_name(Kind::Determiner), "determiner");
  EXPECT_STREQ(kind_name(Kind::NegatedAntonym), "negated_antonym");
  EXPECT_EQ(kind_from_name("negated_antonym"), Kind::NegatedAntonym);
  EXPECT_STREQ(kind_name(Kind::EntitySwap), "entity_swap");
  EXPECT_EQ(kind_from_name("entity_swap"), Kind::EntitySwap);
  EXPECT_FALSE(is_positive(Kind::EntitySwap));
  for (Kind k : {Kind::Synonym, Kind::Passive, Kind::Contraction, Kind::Coordination, Kind::Possessive, Kind::AdverbMove,
                 Kind::Determiner, Kind::NegatedAntonym})
    EXPECT_TRUE(is_positive(k)) << kind_name(k);
  for (Kind k : {Kind::Negation, Kind::RoleSwap, Kind::BindingSwap, Kind::SpatialFlip, Kind::Antonym})
    EXPECT_FALSE(is_positive(k)) << kind_name(k);
  try {
    kind_from_name("negate");
    FAIL() << "expected sieve::Error";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("negate"), std::string::npos);
    EXPECT_NE(msg.find("binding_swap"), std::string::npos);
    EXPECT_NE(msg.find("synonym"), std::string::npos);
  }
}

// ---- tests with WordNet ------------------------------------------------------------------------

class PerturbTest : public test::WordNetTest {
 protected:
  static std::optional<std::string> apply(const std::string& s, Kind k, uint64_t seed = 1) {
    Perturber p(lx());
    std::mt19937_64 rng(seed);
    return p.apply(s, k, rng);
  }
};

#define EXPECT_PERTURB(src, kind, expected)                    \
  do {                                                         \
    auto r_ = apply(src, kind);                                \
    ASSERT_TRUE(r_.has_value()) << src;                        \
    EXPECT_EQ(*r_, expected) << src;                           \
  } while (0)

TEST_F(PerturbTest, TagsASimpleClause) {
  Sentence s = analyse("the dog bit the man", lx());
  ASSERT_EQ(s.tokens.size(), 5u);
  EXPECT_EQ(s.tokens[0].tag, Tag::Det);
  EXPECT_EQ(s.tokens[1].tag, Tag::Noun);
  EXPECT_EQ(s.tokens[2].tag, Tag::Verb);
  EXPECT_EQ(s.tokens[4].tag, Tag::Noun);
  Clause c;
  ASSERT_TRUE(parse_clause(s, c));
  EXPECT_EQ(c.subject.b, 0u);
  EXPECT_EQ(c.subject.e, 2u);
  EXPECT_EQ(c.head, 2u);
  EXPECT_TRUE(c.head_is_verb);
  EXPECT_EQ(c.object.b, 3u);
  EXPECT_EQ(c.object.e, 5u);

  Sentence t = analyse("a red car and a blue house", lx());
  EXPECT_EQ(t.tokens[1].tag, Tag::Adj);
  EXPECT_EQ(t.tokens[2].tag, Tag::Noun);
  EXPECT_EQ(t.tokens[5].tag, Tag::Adj);
  EXPECT_EQ(np_end(t, 0), 3u);
  EXPECT_TRUE(np_third_singular(t, Range{0, 3}, lx()));
  Sentence u = analyse("the dogs chase the cat", lx());
  EXPECT_FALSE(np_third_singular(u, Range{0, 2}, lx()));
}

TEST_F(PerturbTest, Negation) {
  EXPECT_PERTURB("the dog bit the man", Kind::Negation, "the dog did not bite the man");
  EXPECT_PERTURB("The cat is on the table", Kind::Negation, "The cat is not on the table");
  EXPECT_PERTURB("She can swim", Kind::Negation, "She cannot swim");
  EXPECT_PERTURB("He doesn't like tea", Kind::Negation, "He likes tea");
  EXPECT_PERTURB("They don't like tea.", Kind::Negation, "They like tea.");
  EXPECT_PERTURB("the man didn't see the dog", Kind::Negation, "the man saw the dog");
  EXPECT_PERTURB("The dog isn't hungry", Kind::Negation, "The dog is hungry");
  EXPECT_PERTURB("I can't swim", Kind::Negation, "I can swim");
  EXPECT_PERTURB("She cannot swim", Kind::Negation, "She can swim");
  EXPECT_PERTURB("the dog barks", Kind::Negation, "the dog does not bark");
  EXPECT_PERTURB("the dogs bark loudly", Kind::Negation, "the dogs do not bark loudly");
  EXPECT_PERTURB("He has finished the work", Kind::Negation, "He has not finished the work");
  EXPECT_PERTURB("He has a car", Kind::Negation, "He does not have a car");
  // Questions, imperatives and double negatives are left alone.
  EXPECT_FALSE(apply("Is the cat on the table?", Kind::Negation).has_value());
  EXPECT_FALSE(apply("Don't go there", Kind::Negation).has_value());
  EXPECT_FALSE(apply("Nobody never said nothing", Kind::Negation).has_value());
}

TEST_F(PerturbTest, RoleSwap) {
  EXPECT_PERTURB("the dog bit the man", Kind::RoleSwap, "the man bit the dog");
  EXPECT_PERTURB("The dog bit the man.", Kind::RoleSwap, "The man bit the dog.");
  EXPECT_PERTURB("the dogs chase the cat", Kind::RoleSwap, "the cat chases the dogs");
  EXPECT_PERTURB("the cat chases the dogs", Kind::RoleSwap, "the dogs chase the cat");
  EXPECT_PERTURB("The elephant is bigger than the mouse", Kind::RoleSwap, "The mouse is bigger than the elephant");
  EXPECT_PERTURB("John saw Mary", Kind::RoleSwap, "Mary saw John");
  EXPECT_FALSE(apply("it rains", Kind::RoleSwap).has_value());
  EXPECT_FALSE(apply("the dog barked", Kind::RoleSwap).has_value());
  EXPECT_FALSE(apply("the man was bitten by the dog", Kind::RoleSwap).has_value());
  EXPECT_FALSE(apply("he saw her", Kind::RoleSwap).has_value());  // would need case changes
  EXPECT_FALSE(apply("the baby cried the whole trip", Kind::RoleSwap).has_value());  // not an object
  EXPECT_FALSE(apply("Birds fly south in winter", Kind::RoleSwap).has_value());
  EXPECT_FALSE(apply("laws enforcing noise abatement", Kind::RoleSwap).has_value());  // no finite verb
  EXPECT_FALSE(apply("physicists study the nature of matter", Kind::RoleSwap).has_value());  // no determiner on Y
  // "X of Y" relations: both sides determined, same number, not partitives or measures.
  EXPECT_PERTURB("She met the king of the castle", Kind::RoleSwap, "She met the castle of the king");
  EXPECT_PERTURB("He admired the teacher of the student.", Kind::RoleSwap, "He admired the student of the teacher.");
  EXPECT_PERTURB("The roof of the house was red", Kind::RoleSwap, "The house of the roof was red");
  EXPECT_FALSE(apply("She drank a cup of the tea", Kind::RoleSwap).has_value());
  EXPECT_FALSE(apply("She met the leader of the rebels", Kind::RoleSwap).has_value());  // number differs
}

TEST_F(PerturbTest, EntitySwapExchangesTwoNamesOrTwoNumbers) {
  EXPECT_PERTURB("He flew from Paris to Rome", Kind::EntitySwap, "He flew from Rome to Paris");
  EXPECT_PERTURB("The club moved to Leeds in 1950 and closed in 1962.", Kind::EntitySwap,
                 "The club moved to Leeds in 1962 and closed in 1950.");
  // A multi-word name moves whole.
  EXPECT_PERTURB("In the final Great Britain beat New Zealand twice", Kind::EntitySwap,
                 "In the final New Zealand beat Great Britain twice");
  // Coordinated names keep the meaning when swapped: that is a rewrite, not a near-miss.
  EXPECT_FALSE(apply("He visited Paris and Rome", Kind::EntitySwap).has_value());
  EXPECT_FALSE(apply("He visited Paris, Rome", Kind::EntitySwap).has_value());
  // The same name twice, a name and a number, or one entity only: nothing to exchange.
  EXPECT_FALSE(apply("Paris is far from Paris", Kind::EntitySwap).has_value());
  EXPECT_FALSE(apply("He left Paris in 1950", Kind::EntitySwap).has_value());
  EXPECT_FALSE(apply("In 1832 the plot was cut to 40 acres", Kind::EntitySwap).has_value());  // a year, a size
  EXPECT_FALSE(apply("the dog bit the man", Kind::EntitySwap).has_value());
  // Number words are not swapped (their agreement differs: "one dog", "two dogs").
  EXPECT_FALSE(apply("one man saw two dogs", Kind::EntitySwap).has_value());
  EXPECT_TRUE(check_edit("He flew from Paris to Rome", "He flew from Rome to Paris", Kind::EntitySwap, lx()).intended);
  EXPECT_FALSE(check_edit("He flew from Paris to Rome", "He flew from Paris to Milan", Kind::EntitySwap, lx()).intended);
}

// Issue 57: question twins.
TEST_F(PerturbTest, QuestionNegationAddsOrRemovesTheNegation) {
  EXPECT_PERTURB("which drugs interact with warfarin?", Kind::QuestionNegation, "which drugs do not interact with warfarin?");
  EXPECT_PERTURB("does aspirin reduce fever?", Kind::QuestionNegation, "does aspirin not reduce fever?");
  EXPECT_PERTURB("Who wrote the letter?", Kind::QuestionNegation, "Who did not write the letter?");
  EXPECT_PERTURB("Is aspirin safe for children?", Kind::QuestionNegation, "Is aspirin not safe for children?");
  EXPECT_PERTURB("Why did the dog bite the man?", Kind::QuestionNegation, "Why did the dog not bite the man?");
  EXPECT_PERTURB("Which drugs are safe?", Kind::QuestionNegation, "Which drugs are not safe?");
  EXPECT_PERTURB("Why don't people answer me on Quora?", Kind::QuestionNegation, "Why do people answer me on Quora?");
  EXPECT_PERTURB("Can't I change my password?", Kind::QuestionNegation, "Can I change my password?");
  // Not where the subject is not followed by what the negation would scope over.
  EXPECT_FALSE(apply("What is the capital of France?", Kind::QuestionNegation).has_value());
  // Statements are the declarative rules' (Kind::Negation), never this kind's.
  EXPECT_FALSE(apply("the dog bit the man", Kind::QuestionNegation).has_value());
  EXPECT_TRUE(check_edit("does aspirin reduce fever?", "does aspirin not reduce fever?", Kind::QuestionNegation, lx()).intended);
}

TEST_F(PerturbTest, WhSwapAsksForAnotherThing) {
  EXPECT_PERTURB("Why do cats purr?", Kind::WhSwap, "How do cats purr?");
  EXPECT_PERTURB("How do cats purr?", Kind::WhSwap, "Why do cats purr?");
  EXPECT_PERTURB("When did the war end?", Kind::WhSwap, "Where did the war end?");
  EXPECT_PERTURB("Who is the best player?", Kind::WhSwap, "What is the best player?");
  // "how many", "what time", a wh-subject: no clean swap.
  EXPECT_FALSE(apply("How many people live in Paris?", Kind::WhSwap).has_value());
  EXPECT_FALSE(apply("Who wrote the letter?", Kind::WhSwap).has_value());
  EXPECT_FALSE(apply("the dog bit the man", Kind::WhSwap).has_value());
  EXPECT_TRUE(check_edit("Why do cats purr?", "How do cats purr?", Kind::WhSwap, lx()).intended);
}

TEST_F(PerturbTest, QuestionRoleSwapExchangesTheNounPhrases) {
  EXPECT_PERTURB("Did Google buy YouTube?", Kind::QuestionRoleSwap, "Did YouTube buy Google?");
  EXPECT_PERTURB("Why did the dog bite the man?", Kind::QuestionRoleSwap, "Why did the man bite the dog?");
  EXPECT_PERTURB("Does the company own the building?", Kind::QuestionRoleSwap, "Does the building own the company?");
  // Pronouns, a number the auxiliary would not agree with, a passive: left alone.
  EXPECT_FALSE(apply("Does he love her?", Kind::QuestionRoleSwap).has_value());
  EXPECT_FALSE(apply("Does the cat chase the dogs?", Kind::QuestionRoleSwap).has_value());
  EXPECT_FALSE(apply("Was the man bitten by the dog?", Kind::QuestionRoleSwap).has_value());
  EXPECT_FALSE(apply("the dog bit the man", Kind::QuestionRoleSwap).has_value());
}

TEST_F(PerturbTest, NumberChangeMovesOneValue) {
  for (uint64_t seed : {1, 2, 3, 4, 5}) {
    const auto r = apply("What happened in 1998?", Kind::NumberChange, seed);
    ASSERT_TRUE(r.has_value());
    const int year = std::stoi(r->substr(17, 4));
    EXPECT_NE(year, 1998);
    EXPECT_LE(std::abs(year - 1998), 5) << *r;
    EXPECT_TRUE(check_edit("What happened in 1998?", *r, Kind::NumberChange, lx()).intended) << *r;
  }
  const auto m = apply("Is it warm in May?", Kind::NumberChange);
  ASSERT_TRUE(m.has_value());
  EXPECT_NE(*m, "Is it warm in May?");
  EXPECT_FALSE(apply("You may go now", Kind::NumberChange).has_value());  // the modal, not the month
  EXPECT_FALSE(apply("the dog bit the man", Kind::NumberChange).has_value());
  EXPECT_FALSE(check_edit("What happened in 1998?", "What happened in Paris?", Kind::NumberChange, lx()).intended);
}

TEST_F(PerturbTest, PassiveRoleSwapLooksLikeAParaphrase) {
  EXPECT_PERTURB("the dog bit the man", Kind::PassiveRoleSwap, "the dog was bitten by the man");
  EXPECT_PERTURB("The dogs chase the cat.", Kind::PassiveRoleSwap, "The dogs are chased by the cat.");
  EXPECT_PERTURB("John saw Mary", Kind::PassiveRoleSwap, "John was seen by Mary");
  EXPECT_FALSE(is_positive(Kind::PassiveRoleSwap));
  EXPECT_FALSE(apply("it rains", Kind::PassiveRoleSwap).has_value());
  EXPECT_FALSE(apply("the dog has bitten the man", Kind::PassiveRoleSwap).has_value());
  EXPECT_TRUE(check_edit("the dog bit the man", "the dog was bitten by the man", Kind::PassiveRoleSwap, lx()).intended);
  // The true passive keeps the meaning: not this kind's edit (and the reverse holds for Passive).
  EXPECT_FALSE(check_edit("the dog bit the man", "the man was bitten by the dog", Kind::PassiveRoleSwap, lx()).intended);
  EXPECT_FALSE(check_edit("the dog bit the man", "the man bit the dog", Kind::PassiveRoleSwap, lx()).intended);
  EXPECT_FALSE(check_edit("the dog bit the man", "the dog was seen by the man", Kind::PassiveRoleSwap, lx()).intended);
}

TEST_F(PerturbTest, PassivePositive) {
  EXPECT_PERTURB("the dog bit the man", Kind::Passive, "the man was bitten by the dog");
  EXPECT_PERTURB("The dogs chase the cat.", Kind::Passive, "The cat is chased by the dogs.");
  EXPECT_PERTURB("the cat chases the dogs", Kind::Passive, "the dogs are chased by the cat");
  EXPECT_PERTURB("John saw Mary", Kind::Passive, "Mary was seen by John");
  EXPECT_FALSE(apply("he saw her", Kind::Passive).has_value());
  EXPECT_FALSE(apply("it rains", Kind::Passive).has_value());
  EXPECT_FALSE(apply("the man was bitten by the dog", Kind::Passive).has_value());
  EXPECT_FALSE(apply("the dog has bitten the man", Kind::Passive).has_value());  // auxiliary: left alone
  EXPECT_FALSE(apply("the baby cried the whole night", Kind::Passive).has_value());
  EXPECT_TRUE(check_edit("the dog bit the man", "the man was bitten by the dog", Kind::Passive, lx()).intended);
  EXPECT_TRUE(check_edit("the dog chased the cat", "the cat was chased by the dog", Kind::Passive, lx()).intended);
  EXPECT_FALSE(check_edit("the dog chased the cat", "the cat was the dog", Kind::Passive, lx()).intended);
  EXPECT_FALSE(check_edit("the dog bit the man", "the man bit the dog", Kind::Passive, lx()).intended);
  EXPECT_FALSE(check_edit("the dog bit the man", "the man was seen by the dog", Kind::Passive, lx()).intended);
}

TEST_F(PerturbTest, ContractionPositive) {
  // auxiliary + not, both ways; can't / won't keep their spelling.
  EXPECT_PERTURB("The dog is not hungry.", Kind::Contraction, "The dog isn't hungry.");
  EXPECT_PERTURB("He does not like tea", Kind::Contraction, "He doesn't like tea");
  EXPECT_PERTURB("She did not see the car", Kind::Contraction, "She didn't see the car");
  EXPECT_PERTURB("I cannot swim", Kind::Contraction, "I can't swim");
  EXPECT_PERTURB("He will not go", Kind::Contraction, "He won't go");
  EXPECT_PERTURB("I have not seen the film", Kind::Contraction, "I haven't seen the film");
  EXPECT_PERTURB("He can't swim", Kind::Contraction, "He cannot swim");
  EXPECT_PERTURB("They won't come", Kind::Contraction, "They will not come");
  EXPECT_PERTURB("It isn't raining", Kind::Contraction, "It is not raining");  // not "It'sn't"
  // pronoun + auxiliary, both ways.
  EXPECT_PERTURB("it is raining", Kind::Contraction, "it's raining");
  EXPECT_PERTURB("they are happy", Kind::Contraction, "they're happy");
  EXPECT_PERTURB("I am tired", Kind::Contraction, "I'm tired");
  EXPECT_PERTURB("we will go home", Kind::Contraction, "we'll go home");
  EXPECT_PERTURB("They're late", Kind::Contraction, "They are late");
  EXPECT_PERTURB("I'm hungry", Kind::Contraction, "I am hungry");
  EXPECT_PERTURB("I've seen it", Kind::Contraction, "I have seen it");
  EXPECT_PERTURB("He's a doctor", Kind::Contraction, "He is a doctor");
  // Questions and inverted auxiliaries, "'s" that may be "has", "'d", the clause-final auxiliary,
  // main-verb "have" and the possessive 's give nothing.
  EXPECT_FALSE(apply("Isn't it lovely?", Kind::Contraction).has_value());
  EXPECT_FALSE(apply("Don't you know him", Kind::Contraction).has_value());
  EXPECT_FALSE(apply("He's gone home", Kind::Contraction).has_value());
  EXPECT_FALSE(apply("It's been a long day", Kind::Contraction).has_value());
  EXPECT_FALSE(apply("I'd like some tea", Kind::Contraction).has_value());
  EXPECT_FALSE(apply("I know who he is", Kind::Contraction).has_value());
  EXPECT_FALSE(apply("He has not a penny", Kind::Contraction).has_value());
  EXPECT_FALSE(apply("the dog's bone is white", Kind::Contraction).has_value());
  EXPECT_FALSE(apply("the dog bit the man", Kind::Contraction).has_value());

  auto check = [&](const char* a, const char* b, Kind k) { return check_edit(a, b, k, lx()); };
  DiffCheck c1 = check("The dog is not hungry.", "The dog isn't hungry.", Kind::Contraction);
  EXPECT_EQ(c1.shape, "contraction");
  EXPECT_TRUE(c1.intended);
  EXPECT_TRUE(check("I cannot swim", "I can't swim", Kind::Contraction).intended);
  EXPECT_TRUE(check("They won't come", "They will not come", Kind::Contraction).intended);
  EXPECT_TRUE(check("it is raining", "it's raining", Kind::Contraction).intended);
  EXPECT_TRUE(check("I've seen it", "I have seen it", Kind::Contraction).intended);
  EXPECT_FALSE(check("the dog is hungry", "the dog isn't hungry", Kind::Contraction).intended);  // a negation
  EXPECT_FALSE(check("the dog is hungry", "the dog's hungry", Kind::Contraction).intended);     // host not a pronoun
  EXPECT_FALSE(check("they are happy", "they is happy", Kind::Contraction).intended);
  EXPECT_FALSE(check("The dog is not hungry.", "The dog isn't hungry.", Kind::Negation).intended);
}

TEST_F(PerturbTest, CoordinationPositive) {
  EXPECT_PERTURB("salt and pepper", Kind::Coordination, "pepper and salt");
  EXPECT_PERTURB("a red car and a blue house", Kind::Coordination, "a blue house and a red car");
  EXPECT_PERTURB("The cat and the dog are friends.", Kind::Coordination, "The dog and the cat are friends.");
  EXPECT_PERTURB("She bought bread and milk.", Kind::Coordination, "She bought milk and bread.");
  EXPECT_PERTURB("I like tea and coffee", Kind::Coordination, "I like coffee and tea");
  EXPECT_PERTURB("both salt and pepper", Kind::Coordination, "both pepper and salt");
  // "between", lists, a modifier that may cover both ("old men and women", "the bride and
  // groom"), a modifier after the second NP, names and pronouns, fixed binomials, clause
  // coordination and "other" give nothing.
  EXPECT_FALSE(apply("the difference between the cat and the dog", Kind::Coordination).has_value());
  EXPECT_FALSE(apply("apples, pears and plums", Kind::Coordination).has_value());
  EXPECT_FALSE(apply("old men and women", Kind::Coordination).has_value());
  EXPECT_FALSE(apply("the bride and groom", Kind::Coordination).has_value());
  EXPECT_FALSE(apply("the cats and the dogs in the garden", Kind::Coordination).has_value());
  EXPECT_FALSE(apply("John and Mary went home", Kind::Coordination).has_value());
  EXPECT_FALSE(apply("He and I went home", Kind::Coordination).has_value());
  EXPECT_FALSE(apply("bread and butter", Kind::Coordination).has_value());
  EXPECT_FALSE(apply("He fed the cat and the dog barked.", Kind::Coordination).has_value());
  EXPECT_FALSE(apply("the lion and other animals", Kind::Coordination).has_value());
  EXPECT_FALSE(apply("the dog bit the man", Kind::Coordination).has_value());

  auto check = [&](const char* a, const char* b, Kind k) { return check_edit(a, b, k, lx()); };
  DiffCheck c1 = check("salt and pepper", "pepper and salt", Kind::Coordination);
  EXPECT_EQ(c1.shape, "swap");
  EXPECT_TRUE(c1.intended);
  EXPECT_TRUE(check("The cat and the dog are friends.", "The dog and the cat are friends.", Kind::Coordination).intended);
  EXPECT_TRUE(check("a red car and a blue house", "a blue house and a red car", Kind::Coordination).intended);
  // A role swap or an adjective swap is not a reordering around "and".
  EXPECT_FALSE(check("the dog bit the man", "the man bit the dog", Kind::Coordination).intended);
  EXPECT_FALSE(check("a red car and a blue house", "a blue car and a red house", Kind::Coordination).intended);
  EXPECT_FALSE(check("salt and pepper", "salt and pepper", Kind::Coordination).intended);
}

TEST_F(PerturbTest, PossessivePositive) {
  EXPECT_PERTURB("the owner of the dog", Kind::Possessive, "the dog's owner");
  EXPECT_PERTURB("The owner of the dog lives here.", Kind::Possessive, "The dog's owner lives here.");
  EXPECT_PERTURB("He is the son of the king.", Kind::Possessive, "He is the king's son.");
  EXPECT_PERTURB("the new owner of the big dog", Kind::Possessive, "the big dog's new owner");
  EXPECT_PERTURB("She called the owners of the dogs.", Kind::Possessive, "She called the dogs' owners.");
  EXPECT_PERTURB("the dog's owner", Kind::Possessive, "the owner of the dog");
  EXPECT_PERTURB("She called the dogs' owners.", Kind::Possessive, "She called the owners of the dogs.");
  EXPECT_PERTURB("the children's toys", Kind::Possessive, "the toys of the children");
  // Partitives and measures, a prepositional phrase that may belong to Y, "of" as the object of
  // X, an agent Y with an action X, a compound ("potter's wheel"), names, other determiners and a
  // singular in -s give nothing.
  EXPECT_FALSE(apply("a cup of tea", Kind::Possessive).has_value());
  EXPECT_FALSE(apply("the rest of the team", Kind::Possessive).has_value());
  EXPECT_FALSE(apply("the owner of the dog in the park", Kind::Possessive).has_value());
  EXPECT_FALSE(apply("the fear of the dark", Kind::Possessive).has_value());
  EXPECT_FALSE(apply("the discovery of the murderer", Kind::Possessive).has_value());
  EXPECT_FALSE(apply("the doctor's appointment", Kind::Possessive).has_value());
  EXPECT_FALSE(apply("the potter's wheel", Kind::Possessive).has_value());
  EXPECT_FALSE(apply("John's car is red", Kind::Possessive).has_value());
  EXPECT_FALSE(apply("a friend of the family", Kind::Possessive).has_value());
  EXPECT_FALSE(apply("the owner of the bus", Kind::Possessive).has_value());

  auto check = [&](const char* a, const char* b, Kind k) { return check_edit(a, b, k, lx()); };
  DiffCheck c1 = check("the owner of the dog", "the dog's owner", Kind::Possessive);
  EXPECT_EQ(c1.shape, "possessive");
  EXPECT_TRUE(c1.intended);
  EXPECT_TRUE(check("She called the dogs' owners.", "She called the owners of the dogs.", Kind::Possessive).intended);
  EXPECT_TRUE(check("the new owner of the big dog", "the big dog's new owner", Kind::Possessive).intended);
  EXPECT_FALSE(check("the owner of the dog", "the dog of the owner", Kind::Possessive).intended);  // role swap
  EXPECT_FALSE(check("the owner of the dog", "the cat's owner", Kind::Possessive).intended);
  EXPECT_FALSE(check("the owner of the dog", "the owner's dog", Kind::Possessive).intended);
}

TEST_F(PerturbTest, AdverbMovePositive) {
  EXPECT_PERTURB("she quickly opened the door", Kind::AdverbMove, "she opened the door quickly");
  EXPECT_PERTURB("She opened the door quickly.", Kind::AdverbMove, "She quickly opened the door.");
  EXPECT_PERTURB("The dog slowly ate the food.", Kind::AdverbMove, "The dog ate the food slowly.");
  EXPECT_PERTURB("We welcomed her warmly", Kind::AdverbMove, "We warmly welcomed her");
  EXPECT_PERTURB("The man carefully read the letter.", Kind::AdverbMove, "The man read the letter carefully.");
  // Subject-oriented adverbs, no adverb, material after the object, idioms with "it", questions.
  EXPECT_FALSE(apply("he wisely left the room", Kind::AdverbMove).has_value());
  EXPECT_FALSE(apply("he opened the door", Kind::AdverbMove).has_value());
  EXPECT_FALSE(apply("He read the letter carefully to the children.", Kind::AdverbMove).has_value());
  EXPECT_FALSE(apply("he took it lightly", Kind::AdverbMove).has_value());
  EXPECT_FALSE(apply("Did she quickly open the door?", Kind::AdverbMove).has_value());

  auto check = [&](const char* a, const char* b, Kind k) { return check_edit(a, b, k, lx()); };
  DiffCheck c1 = check("she quickly opened the door", "she opened the door quickly", Kind::AdverbMove);
  EXPECT_EQ(c1.shape, "move");
  EXPECT_TRUE(c1.intended);
  EXPECT_TRUE(check("She opened the door quickly.", "She quickly opened the door.", Kind::AdverbMove).intended);
  EXPECT_FALSE(check("he opened the door", "he opened the door quickly", Kind::AdverbMove).intended);  // insert
  EXPECT_FALSE(check("she opened the door", "the door she opened", Kind::AdverbMove).intended);
  EXPECT_FALSE(check("she quickly opened the door", "she opened the door quickly", Kind::RoleSwap).intended);
}

TEST_F(PerturbTest, DeterminerPositive) {
  EXPECT_PERTURB("every student passed the exam", Kind::Determiner, "each student passed the exam");
  EXPECT_PERTURB("Each child got a red apple.", Kind::Determiner, "Every child got a red apple.");
  EXPECT_PERTURB("all the guests left early", Kind::Determiner, "all of the guests left early");
  EXPECT_PERTURB("both of the doors were open", Kind::Determiner, "both the doors were open");
  EXPECT_PERTURB("he drinks a lot of coffee", Kind::Determiner, "he drinks lots of coffee");
  // Pronouns and idioms: "each other", "every so often", "each of", a sentence-final "each".
  EXPECT_FALSE(apply("they love each other", Kind::Determiner).has_value());
  EXPECT_FALSE(apply("we meet every so often", Kind::Determiner).has_value());
  EXPECT_FALSE(apply("each of them sang", Kind::Determiner).has_value());
  EXPECT_FALSE(apply("the apples cost a dollar each", Kind::Determiner).has_value());
  EXPECT_FALSE(apply("she ran all the way", Kind::Determiner).has_value());
  EXPECT_FALSE(apply("the dog bit the man", Kind::Determiner).has_value());
  auto check = [&](const char* a, const char* b) { return check_edit(a, b, Kind::Determiner, lx()).intended; };
  EXPECT_TRUE(check("every student passed", "each student passed"));
  EXPECT_TRUE(check("all the guests left", "all of the guests left"));
  EXPECT_FALSE(check("every student passed", "no student passed"));
  EXPECT_FALSE(check("all the guests left", "some of the guests left"));
}

TEST_F(PerturbTest, NegatedAntonymPositive) {
  EXPECT_PERTURB("the patient is not dead", Kind::NegatedAntonym, "the patient is alive");
  EXPECT_PERTURB("The door wasn't open.", Kind::NegatedAntonym, "The door was closed.");
  EXPECT_PERTURB("she did not forget the keys", Kind::NegatedAntonym, "she remembered the keys");
  EXPECT_PERTURB("He doesn't forget names.", Kind::NegatedAntonym, "He remembers names.");
  EXPECT_PERTURB("we will not forget you", Kind::NegatedAntonym, "we will remember you");
  EXPECT_PERTURB("the attempt did not fail", Kind::NegatedAntonym, "the attempt succeeded");
  // Gradable pairs (no middle ground is not assured), an attributive adjective, "fail" with an
  // object, a question, a plain sentence.
  EXPECT_FALSE(apply("the soup is not hot", Kind::NegatedAntonym).has_value());
  EXPECT_FALSE(apply("it is not open source software", Kind::NegatedAntonym).has_value());
  EXPECT_FALSE(apply("she did not fail the test", Kind::NegatedAntonym).has_value());
  EXPECT_FALSE(apply("is the patient not dead?", Kind::NegatedAntonym).has_value());
  EXPECT_FALSE(apply("the patient is alive", Kind::NegatedAntonym).has_value());
  auto check = [&](const char* a, const char* b) { return check_edit(a, b, Kind::NegatedAntonym, lx()).intended; };
  EXPECT_TRUE(check("the patient is not dead", "the patient is alive"));
  EXPECT_TRUE(check("she did not forget it", "she remembered it"));
  EXPECT_FALSE(check("the patient is not dead", "the patient is dead"));
  EXPECT_FALSE(check("the soup is not hot", "the soup is cold"));
  EXPECT_FALSE(check("she did not forget it", "she remembers it"));  // tense changed
}

TEST_F(PerturbTest, BindingSwap) {
  EXPECT_PERTURB("a red car and a blue house", Kind::BindingSwap, "a blue car and a red house");
  EXPECT_PERTURB("The big dog chased a small cat.", Kind::BindingSwap, "The small dog chased a big cat.");
  // "a old woman" would be wrong: the article does not agree, so no edit.
  EXPECT_FALSE(apply("The old man saw a young woman.", Kind::BindingSwap).has_value());
  EXPECT_PERTURB("A big red ball and a small blue box", Kind::BindingSwap, "A small blue ball and a big red box");
  EXPECT_FALSE(apply("a red car and a house", Kind::BindingSwap).has_value());
  EXPECT_FALSE(apply("a red car and a red house", Kind::BindingSwap).has_value());
}

TEST_F(PerturbTest, SpatialFlip) {
  EXPECT_PERTURB("the lamp is left of the chair", Kind::SpatialFlip, "the lamp is right of the chair");
  EXPECT_PERTURB("the box is above the shelf", Kind::SpatialFlip, "the box is below the shelf");
  EXPECT_PERTURB("the cat sat in front of the door", Kind::SpatialFlip, "the cat sat behind the door");
  EXPECT_PERTURB("the ball is under the table", Kind::SpatialFlip, "the ball is over the table");
  EXPECT_PERTURB("Before dinner we walked", Kind::SpatialFlip, "After dinner we walked");
  EXPECT_FALSE(apply("he left the room", Kind::SpatialFlip).has_value());
  EXPECT_FALSE(apply("he looked forward to the day", Kind::SpatialFlip).has_value());
  EXPECT_FALSE(apply("you are right", Kind::SpatialFlip).has_value());
  EXPECT_FALSE(apply("the dog bit the man", Kind::SpatialFlip).has_value());
}

TEST_F(PerturbTest, AntonymAndSynonym) {
  EXPECT_PERTURB("the water is hot", Kind::Antonym, "the water is cold");
  auto r = apply("the water is hot", Kind::Synonym);
  if (r) EXPECT_EQ(check_edit("the water is hot", *r, Kind::Synonym, lx()).shape, "replace1") << *r;
  auto s = apply("the car is fast", Kind::Synonym, 3);
  ASSERT_TRUE(s.has_value());
  DiffCheck d = check_edit("the car is fast", *s, Kind::Synonym, lx());
  EXPECT_TRUE(d.intended) << *s;
  EXPECT_FALSE(apply("of the and", Kind::Antonym).has_value());
}

TEST_F(PerturbTest, GarbageGivesNothing) {
  std::string long_line;
  for (int i = 0; i < 500; ++i) long_line += "the dog bit the man ";
  for (Kind k : {Kind::Negation, Kind::RoleSwap, Kind::BindingSwap, Kind::SpatialFlip, Kind::Antonym, Kind::Synonym,
                 Kind::Passive, Kind::Contraction, Kind::Coordination, Kind::Possessive, Kind::AdverbMove,
                 Kind::EntitySwap}) {
    for (const std::string g : {"<div>", "", "   ", "日本語のテキスト", "<p>the box is above the shelf</p>",
                                "!!! ??? ...", "12345 678", "'", "n't", "'s", "the dog bit\nthe man"}) {
      EXPECT_FALSE(apply(g, k).has_value()) << kind_name(k) << " on '" << g << "'";
    }
    EXPECT_FALSE(apply(long_line, k).has_value()) << kind_name(k);
  }
}

TEST_F(PerturbTest, CheckEditShapes) {
  auto shape = [&](const char* a, const char* b, Kind k) { return check_edit(a, b, k, lx()); };
  EXPECT_EQ(shape("the dog bit the man", "the dog bit the man", Kind::RoleSwap).shape, "identical");
  EXPECT_FALSE(shape("the dog bit the man", "The dog bit the man", Kind::RoleSwap).intended);

  DiffCheck s1 = shape("the dog bit the man", "the man bit the dog", Kind::RoleSwap);
  EXPECT_EQ(s1.shape, "swap");
  EXPECT_TRUE(s1.intended);
  EXPECT_TRUE(shape("the dogs chase the cat", "the cat chases the dogs", Kind::RoleSwap).intended);
  EXPECT_TRUE(shape("a red car and a blue house", "a blue car and a red house", Kind::BindingSwap).intended);
  EXPECT_FALSE(shape("a red car and a blue house", "a blue car and a red house", Kind::Negation).intended);

  DiffCheck n1 = shape("the dog bit the man", "the dog did not bite the man", Kind::Negation);
  EXPECT_EQ(n1.shape, "insert");
  EXPECT_TRUE(n1.intended);
  DiffCheck n2 = shape("He doesn't like tea", "He likes tea", Kind::Negation);
  EXPECT_EQ(n2.shape, "delete");
  EXPECT_TRUE(n2.intended);
  EXPECT_TRUE(shape("She can swim", "She cannot swim", Kind::Negation).intended);
  EXPECT_TRUE(shape("The cat is on the table", "The cat is not on the table", Kind::Negation).intended);
  EXPECT_TRUE(shape("I can't swim", "I can swim", Kind::Negation).intended);
  EXPECT_TRUE(shape("they do not always agree", "they always agree", Kind::Negation).intended);
  EXPECT_TRUE(shape("Chicago set the record", "Chicago did not set the record", Kind::Negation).intended);
  EXPECT_FALSE(shape("he sets the record", "he did not set the record", Kind::Negation).intended);
  // Wrong tense under do-support, or an inserted word that is not a negation: not intended.
  EXPECT_FALSE(shape("the dog bit the man", "the dog does not bite the man", Kind::Negation).intended);
  DiffCheck n3 = shape("the cat is on the table", "the cat is really on the table", Kind::Negation);
  EXPECT_EQ(n3.shape, "insert");
  EXPECT_FALSE(n3.intended);

  DiffCheck r1 = shape("the water is hot", "the water is cold", Kind::Antonym);
  EXPECT_EQ(r1.shape, "replace1");
  EXPECT_TRUE(r1.intended);
  EXPECT_FALSE(shape("the water is hot", "the water is blue", Kind::Antonym).intended);
  EXPECT_FALSE(shape("the water is hot", "the water is cold", Kind::Synonym).intended);
  EXPECT_TRUE(shape("the car is fast", "the car is quick", Kind::Synonym).intended);

  DiffCheck sp = shape("the cat sat in front of the door", "the cat sat behind the door", Kind::SpatialFlip);
  EXPECT_EQ(sp.shape, "replace");
  EXPECT_TRUE(sp.intended);
  EXPECT_TRUE(shape("the box is above the shelf", "the box is below the shelf", Kind::SpatialFlip).intended);
  EXPECT_FALSE(shape("the box is above the shelf", "the box is near the shelf", Kind::SpatialFlip).intended);

  DiffCheck o = shape("the dog bit the man", "a cat scratched my old neighbour yesterday", Kind::RoleSwap);
  EXPECT_EQ(o.shape, "other");
  EXPECT_FALSE(o.intended);
  EXPECT_EQ(shape("the dog bit the man", "the man bit a dog", Kind::RoleSwap).shape, "other");
  EXPECT_EQ(shape("the dog bit the man", "the dog", Kind::Negation).shape, "delete");
}

// The quality measure over WordNet's example sentences: per kind, how many sentences
// yielded an edit and the share whose token diff is exactly the intended edit.
TEST_F(PerturbTest, QualityOnWordNetExamples) {
  // SIEVE_NEARMISS_EXAMPLES=0 runs all of WordNet's examples (the floors scale with the count).
  size_t count = 2000;
  if (const char* env = std::getenv("SIEVE_NEARMISS_EXAMPLES")) count = std::strtoull(env, nullptr, 10);
  const std::vector<std::string> examples = lx().example_sentences(count);
  if (count) ASSERT_EQ(examples.size(), count);
  const double scale = static_cast<double>(examples.size()) / 2000.0;
  Perturber p(lx());
  struct Floor {
    Kind k;
    size_t min_yield;
  };
  // Floors about 2/3 of what the generator yields on the first 2000 examples (1225, 96, 22, 110,
  // 821, 1797 when written; contraction 103, coordination 6, possessive 35, adverb_move 1 when
  // those were added; determiner 44), so that a tagger or rule regression shows. negated_antonym
  // yields 0 of these 2000 (2 of all 48,239): its hand-written cases above are its test.
  for (Floor f : {Floor{Kind::Negation, 800}, Floor{Kind::RoleSwap, 64}, Floor{Kind::BindingSwap, 14},
                  Floor{Kind::SpatialFlip, 75}, Floor{Kind::Antonym, 550}, Floor{Kind::Synonym, 1200},
                  Floor{Kind::Contraction, 68}, Floor{Kind::Coordination, 4}, Floor{Kind::Possessive, 23},
                  Floor{Kind::AdverbMove, 1}, Floor{Kind::Determiner, 29}}) {
    std::mt19937_64 rng(20261129);
    size_t yielded = 0, intended = 0, shown = 0;
    for (const auto& e : examples) {
      auto r = p.apply(e, f.k, rng);
      if (!r) continue;
      ++yielded;
      DiffCheck d = check_edit(e, *r, f.k, lx());
      if (std::getenv("SIEVE_NEARMISS_SHOW") && std::string(std::getenv("SIEVE_NEARMISS_SHOW")) == "all")
        std::cout << "  {" << kind_name(f.k) << "} " << e << " -> " << *r << "\n";
      if (d.intended) {
        ++intended;
      } else if (shown < 5 || std::getenv("SIEVE_NEARMISS_SHOW")) {
        ++shown;
        std::cout << "  [" << kind_name(f.k) << " not intended: " << d.shape << "] " << e << " -> " << *r << "\n";
      }
    }
    double rate = yielded ? static_cast<double>(intended) / static_cast<double>(yielded) : 0.0;
    std::cout << kind_name(f.k) << ": yield " << yielded << "/" << examples.size() << ", intended " << intended
              << " (" << rate << ")\n";
    EXPECT_GE(static_cast<double>(yielded), static_cast<double>(f.min_yield) * scale) << kind_name(f.k);
    EXPECT_GE(rate, 0.9) << kind_name(f.k);
  }
}

}  // namespace
}  // namespace sieve::nearmiss
