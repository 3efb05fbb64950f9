// Corpus building: the dictd reader (base64 numbers worked out by hand, a tiny database written
// here with zlib), the GCIDE and FOLDOC cleaners on short articles written for these tests in the
// style of the real files, sentence splitting, deduplication, pair mining on hand-made entries,
// build_corpus end to end on a fake /usr/share/dictd, and facts of the real installed files
// (skipped with a message where dict-gcide / dict-foldoc / wordnet-base are absent).
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "core/file_util.h"
#include "corpus/corpus_builder.h"
#include "corpus/dictd.h"
#include "corpus/sources.h"
#include "nearmiss/lexicon.h"
#include "sieve/error.h"
#include "support/test_util.h"

namespace sieve::corpus {
namespace {

// --- dictd ----------------------------------------------------------------------------------------

TEST(DictdNumber, DecodesByHand) {
  // Digit values: A-Z = 0..25, a-z = 26..51, 0-9 = 52..61, '+' = 62, '/' = 63; base 64, most
  // significant digit first.
  EXPECT_EQ(decode_dictd_number("A"), 0u);
  EXPECT_EQ(decode_dictd_number("B"), 1u);
  EXPECT_EQ(decode_dictd_number("a"), 26u);
  EXPECT_EQ(decode_dictd_number("0"), 52u);
  EXPECT_EQ(decode_dictd_number("+"), 62u);
  EXPECT_EQ(decode_dictd_number("/"), 63u);
  EXPECT_EQ(decode_dictd_number("BA"), 64u);    // 1*64 + 0
  EXPECT_EQ(decode_dictd_number("//"), 4095u);  // 63*64 + 63
  EXPECT_EQ(decode_dictd_number("F5"), 377u);   // F=5, 5=57: 5*64 + 57 = 320 + 57
  // C=2, D=3, x=49, m=38, Q=16:
  // 2*64^4 + 3*64^3 + 49*64^2 + 38*64 + 16
  //   = 2*16777216 + 3*262144 + 49*4096 + 2432 + 16
  //   = 33554432 + 786432 + 200704 + 2432 + 16 = 34544016
  // (the offset of GCIDE's index line "dog CDxmQ F5").
  EXPECT_EQ(decode_dictd_number("CDxmQ"), 34544016u);
  for (uint64_t v : {0ull, 1ull, 63ull, 64ull, 377ull, 34544016ull, 1ull << 40})
    EXPECT_EQ(decode_dictd_number(encode_dictd_number(v)), v);
  EXPECT_EQ(encode_dictd_number(377), "F5");
}

TEST(DictdNumber, RejectsBadDigits) {
  test::expect_error([] { decode_dictd_number(""); }, "empty");
  test::expect_error([] { decode_dictd_number("A-B"); }, "invalid character '-'");
  test::expect_error([] { decode_dictd_number("A=="); }, "invalid character '='");
  // 12 digits are 72 bits.
  test::expect_error([] { decode_dictd_number("////////////"); }, "64 bits");
}

TEST(DictdIndex, ParsesAndNamesTheBadLine) {
  auto idx = parse_dictd_index("dog\tCDxmQ\tF5\n\nice cream\tBA\tB\tIce Cream\n", "x.index");
  ASSERT_EQ(idx.size(), 2u);
  EXPECT_EQ(idx[0].headword, "dog");
  EXPECT_EQ(idx[0].offset, 34544016u);
  EXPECT_EQ(idx[0].length, 377u);
  EXPECT_EQ(idx[0].line, 1u);
  EXPECT_EQ(idx[1].headword, "ice cream");  // a fourth field (original spelling) is allowed
  EXPECT_EQ(idx[1].offset, 64u);
  EXPECT_EQ(idx[1].line, 3u);
  test::expect_error([] { parse_dictd_index("dog\tA\tB\ncat\tB\n", "x.index"); }, "x.index:2: expected");
  test::expect_error([] { parse_dictd_index("dog\tA\tB\ncat\tB!\tC\n", "x.index"); },
                     "x.index:2: invalid character '!'");
  test::expect_error([] { parse_dictd_index("\tA\tB\n", "x.index"); }, "x.index:1: empty headword");
}

void write_gzip(const std::string& path, const std::string& data) {
  gzFile f = gzopen(path.c_str(), "wb9");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(gzwrite(f, data.data(), static_cast<unsigned>(data.size())), static_cast<int>(data.size()));
  gzclose(f);
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
}

// Three articles. Byte counts (each line with its '\n'):
//   art0 "00-database-short\n" (18) + "   Tiny test dictionary\n" (24)           = 42 at offset 0
//   art1 "Cat \Cat\, n.\n" (14) + "   A small domestic feline.\n" (28)         = 42 at offset 42
//   art2 "Kitten \Kit"ten\, n.\n" (21) + "   A young cat.\n" (16)               = 37 at offset 84
// In dictd digits: 0 = "A", 42 = "q", 84 = "BU" (1*64 + 20), 37 = "l", 121 bytes in all.
const std::string kArt0 = "00-database-short\n   Tiny test dictionary\n";
const std::string kArt1 = "Cat \\Cat\\, n.\n   A small domestic feline.\n";
const std::string kArt2 = "Kitten \\Kit\"ten\\, n.\n   A young cat.\n";
const std::string kIndex =
    "00-database-short\tA\tq\n"
    "cat\tq\tq\n"
    "Cat\tq\tq\n"  // an alias of the same article (dictd looks up case-insensitively)
    "kitten\tBU\tl\n";

TEST(DictdDatabase, ReadsATinyDictzipDatabase) {
  ASSERT_EQ(kArt0.size(), 42u);
  ASSERT_EQ(kArt1.size(), 42u);
  ASSERT_EQ(kArt2.size(), 37u);
  std::string dir = test::make_temp_dir("dictd");
  write_gzip(dir + "/tiny.dict.dz", kArt0 + kArt1 + kArt2);
  write_text(dir + "/tiny.index", kIndex);
  ASSERT_TRUE(DictdDatabase::available(dir, "tiny"));
  EXPECT_FALSE(DictdDatabase::available(dir, "other"));
  DictdDatabase db = DictdDatabase::open(dir, "tiny");
  EXPECT_EQ(db.data_size(), 121u);
  ASSERT_EQ(db.index().size(), 4u);
  EXPECT_EQ(db.text(db.index()[3]), kArt2);
  auto found = db.find("CAT");
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(db.text(*found[0]), kArt1);
  EXPECT_TRUE(db.find("dog").empty());
  // One article per range, in data order, metadata left out, aliases gathered.
  auto arts = db.articles();
  ASSERT_EQ(arts.size(), 2u);
  EXPECT_EQ(arts[0].text, kArt1);
  EXPECT_EQ(arts[0].headwords, (std::vector<std::string>{"cat", "Cat"}));
  EXPECT_EQ(arts[1].offset, 84u);
  EXPECT_EQ(arts[1].text, kArt2);
  // An uncompressed .dict reads the same.
  std::string plain = test::make_temp_dir("dictd_plain");
  write_text(plain + "/tiny.dict", kArt0 + kArt1 + kArt2);
  write_text(plain + "/tiny.index", kIndex);
  EXPECT_EQ(DictdDatabase::open(plain, "tiny").articles().size(), 2u);
}

TEST(DictdDatabase, RangePastTheEndAndBadFilesAreErrors) {
  std::string dir = test::make_temp_dir("dictd_bad");
  write_gzip(dir + "/tiny.dict.dz", kArt0 + kArt1 + kArt2);
  // "kitten" at 84 with 38 bytes ("m") ends at 122 > 121.
  write_text(dir + "/tiny.index", "cat\tq\tq\nkitten\tBU\tm\n");
  test::expect_error([&] { DictdDatabase::open(dir, "tiny"); },
                     "tiny.index:2: 'kitten' points at bytes 84..122");
  test::expect_error([&] { DictdDatabase::open(dir, "missing"); }, "missing.index' not found");
  write_text(dir + "/broken.index", "cat\tA\tB\n");
  write_text(dir + "/broken.dict.dz", std::string("\x1f\x8b\x08\x00garbage-not-deflate", 22));
  EXPECT_FALSE(test::error_of([&] { DictdDatabase::open(dir, "broken"); }).empty());
}

// --- cleaning primitives --------------------------------------------------------------------------

TEST(Cleaning, AccentCodesFoldToAscii) {
  EXPECT_EQ(fold_accent_codes("Zo[\"o]l[`e] caf['e] na[\"i]ve fa[,c]ade [ae]on"),
            "Zoole cafe naive facade aeon");
  EXPECT_EQ(fold_accent_codes("h[imac]t, l[a^]n\"t[~e]rn, b[=oo]t, [alpha]-naphthol"),
            "hit, lan\"tern, boot, alpha-naphthol");
  EXPECT_EQ(fold_accent_codes("212[deg] F., [frac12] inch, [frac925x1000]"),
            "212 degrees F., 1/2 inch, 925/1000");
  EXPECT_EQ(fold_accent_codes("[Obs.] [R.] [1913 Webster]"),
            "[Obs.] [R.] [1913 Webster]");  // tags are not codes
}

TEST(Cleaning, StripGcideMarkup) {
  EXPECT_EQ(
      strip_gcide_markup("A quadruped of the genus {Canis}, esp. the domestic dog ({Canis familiaris})."),
      "A quadruped of the genus Canis, esp. the domestic dog (Canis familiaris).");
  EXPECT_EQ(strip_gcide_markup("To darken. [Obs.]"), "To darken.");
  EXPECT_EQ(strip_gcide_markup("A spasm [NL., fr. Gr. {laryggismo`s}, a croaking.] of the glottis."),
            "A spasm of the glottis.");
  EXPECT_EQ(strip_gcide_markup("{Dog ape} (Zo[\"o]l.), a male ape."), "Dog ape, a male ape.");
  EXPECT_EQ(strip_gcide_markup("the bird ({Turdus}) of Europe"), "the bird (Turdus) of Europe");
  // An editor's insertion in a quotation keeps its word; elsewhere brackets go.
  EXPECT_EQ(strip_gcide_markup("[They] set up over his head his accusation.", true),
            "They set up over his head his accusation.");
  EXPECT_EQ(strip_gcide_markup("[They] set up over his head his accusation."),
            "set up over his head his accusation.");
  EXPECT_EQ(strip_gcide_markup("That he might . . . abandon them."), "That he might . . . abandon them.");
}

TEST(Cleaning, FoldToAsciiHandlesUtf8AndCp1252) {
  EXPECT_EQ(fold_to_ascii("G\xc3\xb6"
                          "del, Fr\xc3\xa4nkel, fa\xc3\xa7"
                          "ade"),
            "Godel, Frankel, facade");
  EXPECT_EQ(fold_to_ascii("market\x92s drop, fa\xe7"
                          "ade"),
            "market's drop, facade");  // stray cp1252 bytes
  EXPECT_EQ(fold_to_ascii("\xe2\x80\x9cquoted\xe2\x80\x9d \xe2\x80\x94 dash"), "\"quoted\" - dash");
  EXPECT_EQ(fold_to_ascii("\xce\xbb-calculus"), "\xce\xbb-calculus");  // other UTF-8 is kept
}

TEST(SentenceSplit, RespectsAbbreviations) {
  EXPECT_EQ(split_sentences("The dog barked. It ran away!  Did it? Yes."),
            (std::vector<std::string>{"The dog barked.", "It ran away!", "Did it?", "Yes."}));
  // e.g., i.e., Mr., initials, dictionary abbreviations (n., v. t.) and "cf." do not end sentences.
  EXPECT_EQ(split_sentences("A hound, e.g. Rex. Mr. Smith owns it, i.e. Rex. Sir W. Scott wrote it."),
            (std::vector<std::string>{"A hound, e.g. Rex.", "Mr. Smith owns it, i.e. Rex.",
                                      "Sir W. Scott wrote it."}));
  EXPECT_EQ(split_sentences("Used as v. t. To follow, cf. Hound. Then it stops."),
            (std::vector<std::string>{"Used as v. t. To follow, cf. Hound.", "Then it stops."}));
  // "etc." ends a sentence when a capital follows; an ellipsis does not; a lower-case word does not.
  EXPECT_EQ(split_sentences("Bells, tents, etc. The rest is free."),
            (std::vector<std::string>{"Bells, tents, etc.", "The rest is free."}));
  EXPECT_EQ(split_sentences("He paused . . . Then went on. e.g. no"),
            (std::vector<std::string>{"He paused . . . Then went on. e.g. no"}));
  EXPECT_EQ(split_sentences("It came on Oct. 22 in 1776. It left."),
            (std::vector<std::string>{"It came on Oct. 22 in 1776.", "It left."}));
  EXPECT_EQ(split_sentences("He said \"Go home.\" She went."),
            (std::vector<std::string>{"He said \"Go home.\"", "She went."}));
  EXPECT_TRUE(split_sentences("   ").empty());
}

TEST(Cleaning, WordsAndSentences) {
  EXPECT_EQ(count_words("a -- b, c ."), 3u);
  EXPECT_EQ(as_sentence("the army retreated from the field"), "The army retreated from the field.");
  EXPECT_EQ(as_sentence("is it? "), "Is it?");
  // A quotation cut from a longer one keeps no stray quote mark; markup and short lines go.
  Entry e;
  e.paragraphs = {"But something ails it now: the spot is cursed.\"", "He said \"go\" twice.", "Too short.",
                  "x = {y} + z and more"};
  size_t dropped = 0;
  EXPECT_EQ(
      entry_sentences(e, &dropped),
      (std::vector<std::string>{"But something ails it now: the spot is cursed.", "He said \"go\" twice."}));
  EXPECT_EQ(dropped, 2u);
}

// --- GCIDE ----------------------------------------------------------------------------------------

// Written for this test in the style of dict-gcide's articles (header with pronunciation and
// etymology, numbered senses with "as," usage, an indented quotation, an inline quotation, a
// sense with sub-senses, a run-on phrase, a Syn: list) and ending, as many real articles do, with
// the next article's headword after the last source tag.
const char* kLantern =
    "Lantern \\Lan\"tern\\ (l[a^]n\"t[~e]rn), n. [F. lanterne, L.\n"
    "   lanterna. See {Lamp}.]\n"
    "   1. Something that encloses a light and protects it from the\n"
    "      wind; as, a hand lantern; the lantern was hung in the hall.\n"
    "      [1913 Webster]\n"
    "\n"
    "            He carried a lantern through the caf['e]. --Anon.\n"
    "      [1913 Webster]\n"
    "\n"
    "   2. (Arch.) A small structure on a roof, to admit light. [Obs.]\n"
    "      \"A lantern on the dome.\" --Smith.\n"
    "      [1913 Webster]\n"
    "\n"
    "   3. (Mach.)\n"
    "      (a) A lantern wheel.\n"
    "      (b) A cage for a pinion in a mill; -- called also\n"
    "          {trundle}.\n"
    "          [1913 Webster]\n"
    "\n"
    "   {Dark lantern}, or {Bull's-eye lantern} (Naut.), a lantern\n"
    "      whose light can be hidden. See {Dark}.\n"
    "      [1913 Webster]\n"
    "\n"
    "   Syn: Lamp; light; beacon; signal fire.\n"
    "   [1913 Webster] Lanternfish\n";

TEST(Gcide, CleansAWholeArticle) {
  Entry e = clean_gcide_article(kLantern);
  EXPECT_EQ(e.source, Source::Gcide);
  EXPECT_EQ(e.headword, "lantern");
  EXPECT_EQ(e.pos, "noun");
  EXPECT_FALSE(e.from_wordnet);
  ASSERT_EQ(e.senses.size(), 4u);
  EXPECT_EQ(e.senses[0].definition, "Something that encloses a light and protects it from the wind.");
  EXPECT_EQ(e.senses[0].examples,
            (std::vector<std::string>{"a hand lantern", "the lantern was hung in the hall"}));
  EXPECT_EQ(e.senses[1].definition, "A small structure on a roof, to admit light.");
  EXPECT_TRUE(e.senses[1].examples.empty());
  EXPECT_EQ(e.senses[2].definition, "A lantern wheel.");
  EXPECT_EQ(e.senses[3].definition, "A cage for a pinion in a mill; called also trundle.");
  ASSERT_EQ(e.quotations.size(), 2u);
  EXPECT_EQ(e.quotations[0].text, "He carried a lantern through the cafe.");
  EXPECT_EQ(e.quotations[0].author, "Anon.");
  EXPECT_EQ(e.quotations[1].text, "A lantern on the dome.");
  EXPECT_EQ(e.quotations[1].author, "Smith.");
  ASSERT_EQ(e.phrases.size(), 1u);
  EXPECT_EQ(e.phrases[0].phrase, "Dark lantern");
  EXPECT_EQ(e.phrases[0].definition, "a lantern whose light can be hidden.");
  EXPECT_EQ(e.synonyms,
            (std::vector<std::string>{"lamp", "light", "beacon", "signal fire"}));  // 1913 capitals dropped
  // The sentences, in article order: no pronunciation, etymology, tags, citations, braces, labels,
  // nor the next article's headword.
  EXPECT_EQ(entry_sentences(e), (std::vector<std::string>{
                                    "Something that encloses a light and protects it from the wind; as, a "
                                    "hand lantern; the lantern was "
                                    "hung in the hall.",
                                    "He carried a lantern through the cafe.",
                                    "A small structure on a roof, to admit light.",
                                    "A lantern on the dome.",
                                    "A lantern wheel.",
                                    "A cage for a pinion in a mill; called also trundle.",
                                    "Dark lantern, a lantern whose light can be hidden.",
                                }));
}

TEST(Gcide, HeadersAndWordNetArticles) {
  // WordNet 1.5 additions: lower-case, "n." without a bracket, comma-separated Syn:.
  Entry w = clean_gcide_article(
      "brook trout \\brook trout\\ n.\n"
      "   1. a small trout of eastern North America.\n"
      "\n"
      "   Syn: speckled trout, Salvelinus fontinalis, char.\n"
      "        [WordNet 1.5]\n");
  EXPECT_TRUE(w.from_wordnet);
  EXPECT_EQ(w.headword, "brook trout");
  EXPECT_EQ(w.pos, "noun");
  ASSERT_EQ(w.senses.size(), 1u);
  EXPECT_EQ(w.senses[0].definition, "a small trout of eastern North America.");
  EXPECT_EQ(w.synonyms, (std::vector<std::string>{"speckled trout", "Salvelinus fontinalis", "char"}));
  // A header over two lines, the second at the left margin; accent codes in the headword; a verb.
  Entry v = clean_gcide_article(
      "Na[\"i]ve \\Na*[\"i]ve\"\\, Naif \\Na\"if\\,\n"
      "\\Na*if\"\\, a. [F. na[\"i]f.]\n"
      "   Having native or unaffected simplicity. --Dryden.\n"
      "   [1913 Webster]\n");
  EXPECT_EQ(v.headword, "naive");
  EXPECT_EQ(v.pos, "adj");
  ASSERT_EQ(v.senses.size(), 1u);
  EXPECT_EQ(v.senses[0].definition, "Having native or unaffected simplicity.");
  Entry t = clean_gcide_article(
      "Dog \\Dog\\, v. t. [imp. & p. p. {Dogged}; p. pr. & vb.\n"
      "   n. {Dogging}.]\n"
      "   To hunt or track like a hound. -- {Dog\"ger}, n.\n"
      "   [1913 Webster]\n");
  EXPECT_EQ(t.headword, "dog");
  EXPECT_EQ(t.pos, "verb");
  ASSERT_EQ(t.senses.size(), 1u);
  EXPECT_EQ(t.senses[0].definition, "To hunt or track like a hound.");  // the derived noun is cut
}

TEST(Gcide, UsageExamplesBecomeSentencesOnlyWhenFullClauses) {
  if (!nearmiss::Lexicon::available()) GTEST_SKIP() << "WordNet not installed (apt install wordnet-base)";
  auto lex = nearmiss::Lexicon::load();
  Entry e = clean_gcide_article(kLantern);
  // "a hand lantern" is a fragment; "the lantern was hung in the hall" is a clause; quotations are kept.
  EXPECT_EQ(entry_examples(e, lex.get()),
            (std::vector<std::string>{"The lantern was hung in the hall.",
                                      "He carried a lantern through the cafe.", "A lantern on the dome."}));
  EXPECT_TRUE(is_full_clause("the defeated army retreated from the field", *lex));
  EXPECT_FALSE(is_full_clause("a happy omen", *lex));
  EXPECT_FALSE(is_full_clause("to tie a cord to a tree", *lex));
  // Without a lexicon GCIDE usage cannot be judged and is left out.
  EXPECT_EQ(entry_examples(e, nullptr).size(), 2u);
}

// --- FOLDOC ---------------------------------------------------------------------------------------

TEST(Foldoc, CleansAnArticle) {
  Entry e = clean_foldoc_article(
      "Human Interface Device\n"
      "HID\n"
      "\n"
      "   <hardware> (HID) Any device to interact directly with humans\n"
      "   (mostly input) like {keyboard}, {mouse}, or {graphics\n"
      "   tablet}.  It is usually plugged in.\n"
      "\n"
      "   The USB class for them is described at URL\n"
      "   http://usb.org/hid/.  Write to hid@usb.org for a copy.\n"
      "\n"
      "         if (hid) poll();\n"
      "\n"
      "   [\"HID Spec\", USB-IF, 2001].\n"
      "\n"
      "   See also {USB}, {keyboard}, {mouse} and {joystick}.\n"
      "\n"
      "   {HID page (http://example.org/hid.html)}.\n"
      "\n"
      "   (2001-03-29)\n");
  EXPECT_EQ(e.source, Source::Foldoc);
  EXPECT_EQ(e.headword, "Human Interface Device");
  EXPECT_EQ(e.pos, "");
  ASSERT_EQ(e.senses.size(), 1u);
  // The first sentence of the first paragraph, without the domain tag and the acronym.
  EXPECT_EQ(
      e.senses[0].definition,
      "Any device to interact directly with humans (mostly input) like keyboard, mouse, or graphics tablet.");
  // No code, reference, "See also" list, link, date stamp, URL; the sentence that lost its e-mail
  // address is dropped.
  EXPECT_EQ(entry_sentences(e), (std::vector<std::string>{
                                    "Any device to interact directly with humans (mostly input) like "
                                    "keyboard, mouse, or graphics tablet.",
                                    "It is usually plugged in.",
                                    "The USB class for them is described.",
                                }));
}

// --- pairs ----------------------------------------------------------------------------------------

Entry make_entry(Source s, const std::string& headword, const std::string& pos, std::vector<Sense> senses,
                 std::vector<std::string> synonyms = {}) {
  Entry e;
  e.source = s;
  e.headword = headword;
  e.pos = pos;
  e.senses = std::move(senses);
  e.synonyms = std::move(synonyms);
  return e;
}

TEST(Pairs, EveryCategoryFromAMiniSource) {
  std::vector<Entry> entries = {
      // A WordNet synset of "lantern" with two examples and two other lemmas.
      make_entry(Source::WordNet, "lantern", "noun",
                 {{"light in a transparent protective case", {"he lit the lantern", "the lantern swung"}}},
                 {"lamp", "storm lantern"}),
      // An example shared with "lantern" (another anchor, so another pair) and a one-word "example".
      make_entry(Source::WordNet, "lamp", "noun", {{"a source of light", {"he lit the lantern", "lamps"}}},
                 {"lantern"}),
      // GCIDE senses of "lantern" (noun): the second shares "light" and "case" with the WordNet gloss.
      make_entry(Source::Gcide, "lantern", "noun",
                 {{"A tower open at the sides.", {}},
                  {"A case enclosing a light, protecting it from wind.", {"a hand lantern"}},
                  {"See Lamp.", {}}},
                 {"lamp", "beacon", "signal fire", "Lantern"}),
      // FOLDOC counts as a noun; it shares nothing with the glosses.
      make_entry(Source::Foldoc, "lantern", "", {{"A Java applet framework.", {}}}),
  };
  entries[2].phrases.push_back({"Dark lantern", "a lantern whose light can be hidden."});
  auto pairs = mine_pairs(entries, nullptr);
  std::vector<std::string> got;
  for (const auto& p : pairs) got.push_back(p.category + ": " + p.anchor + " | " + p.positive);
  EXPECT_EQ(got,
            (std::vector<std::string>{
                "headword_definition: lantern (noun) | light in a transparent protective case",
                "headword_definition: lamp (noun) | a source of light",
                "headword_definition: lantern (noun) | A tower open at the sides.",
                "headword_definition: lantern (noun) | A case enclosing a light, protecting it from wind.",
                "headword_definition: Dark lantern | a lantern whose light can be hidden.",
                "headword_definition: lantern | A Java applet framework.",
                "gloss_example: light in a transparent protective case | he lit the lantern",
                "gloss_example: light in a transparent protective case | the lantern swung",
                "gloss_example: a source of light | he lit the lantern",
                // Both WordNet glosses are "lantern" senses (the second through the lemma "lantern"
                // of the "lamp" synset) and share "light" with the GCIDE sense "A case enclosing a
                // light..."; the first also shares "case", so it takes it, one-to-one. "See Lamp."
                // is a bare cross-reference and FOLDOC shares nothing.
                "definition_definition: light in a transparent protective case | A case enclosing a light, "
                "protecting it from wind.",
                "synonym: lantern | lamp",
                "synonym: lantern | beacon",
            }));
  for (const auto& p : pairs) EXPECT_NE(p.anchor, p.positive);
}

TEST(Pairs, DeterministicAndDeduplicated) {
  std::vector<Entry> entries = {
      make_entry(Source::WordNet, "big", "adj", {{"above average in size", {"a big house"}}}, {"large"}),
      make_entry(Source::WordNet, "large", "adj", {{"above average in size", {"a big house"}}}, {"big"}),
  };
  // A definition equal to another but for case and the final period is no pair; nor are
  // inflected forms listed as synonyms.
  entries.push_back(make_entry(Source::Gcide, "big", "adj", {{"Above average in size.", {}}}, {"bigs"}));
  entries.push_back(
      make_entry(Source::WordNet, "crawl", "noun", {{"a slow mode of travel", {}}}, {"crawling"}));
  auto a = mine_pairs(entries, nullptr);
  auto b = mine_pairs(entries, nullptr);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].anchor + a[i].positive, b[i].anchor + b[i].positive);
  size_t syn = 0, gloss = 0, defdef = 0;
  for (const auto& p : a) {
    syn += p.category == "synonym";
    gloss += p.category == "gloss_example";
    defdef += p.category == "definition_definition";
  }
  EXPECT_EQ(syn, 1u);     // big/large once, in either order; not big/bigs nor crawl/crawling
  EXPECT_EQ(gloss, 1u);   // the same gloss and example once
  EXPECT_EQ(defdef, 0u);  // "above average in size" = "Above average in size."
}

// --- build_corpus end to end ----------------------------------------------------------------------

// A fake /usr/share/dictd with a three-article GCIDE (two share a sentence) and no FOLDOC.
std::string make_fake_dictd() {
  std::string dir = test::make_temp_dir("fake_dictd");
  std::string a1 = "Cat \\Cat\\, n.\n   A small domestic feline animal.\n   [1913 Webster]\n";
  std::string a2 = "Puss \\Puss\\, n.\n   A small domestic feline animal.\n   [1913 Webster]\n";
  std::string a3 = "Kit \\Kit\\, n.\n   A cat. [Colloq.]\n   [1913 Webster]\n";
  std::string data = a1 + a2 + a3;
  std::string index = "cat\tA\t" + encode_dictd_number(a1.size()) + "\n" + "puss\t" +
                      encode_dictd_number(a1.size()) + "\t" + encode_dictd_number(a2.size()) + "\n" +
                      "kit\t" + encode_dictd_number(a1.size() + a2.size()) + "\t" +
                      encode_dictd_number(a3.size()) + "\n";
  write_gzip(dir + "/gcide.dict.dz", data);
  write_text(dir + "/gcide.index", index);
  return dir;
}

TEST(BuildCorpus, WritesTheFourFilesAndSkipsMissingSources) {
  std::string dictd = make_fake_dictd();
  std::string out = test::make_temp_dir("corpus_out") + "/out";
  CorpusOptions o;
  o.out_dir = out;
  o.dictd_dir = dictd;
  o.wordnet_dir = dictd + "/no-wordnet";
  CorpusReport r = build_corpus(o);
  // One blank line after each document; "Kit" keeps no sentence ("A cat." is 2 words, though a
  // fine definition); the second "A small domestic feline animal." is a duplicate.
  EXPECT_EQ(read_file(out + "/sentences.txt"), "A small domestic feline animal.\n\n");
  EXPECT_EQ(read_file(out + "/examples.txt"), "");
  EXPECT_EQ(read_file(out + "/pairs.jsonl"),
            "{\"anchor\":\"cat (noun)\",\"positive\":\"A small domestic feline "
            "animal.\",\"category\":\"headword_definition\"}\n"
            "{\"anchor\":\"puss (noun)\",\"positive\":\"A small domestic feline "
            "animal.\",\"category\":\"headword_definition\"}\n"
            "{\"anchor\":\"kit (noun)\",\"positive\":\"A cat.\",\"category\":\"headword_definition\"}\n");
  auto j = nlohmann::json::parse(read_file(out + "/report.json"));
  EXPECT_EQ(j["sources"]["wordnet"]["available"], false);
  EXPECT_NE(j["sources"]["wordnet"]["skipped"].get<std::string>().find("apt install wordnet-base"),
            std::string::npos);
  EXPECT_EQ(j["sources"]["foldoc"]["available"], false);
  EXPECT_EQ(j["sources"]["gcide"]["entries"], 3);
  EXPECT_EQ(j["sources"]["gcide"]["sentences"], 1);
  EXPECT_EQ(j["sources"]["gcide"]["duplicates_removed"], 1);
  EXPECT_EQ(j["sources"]["gcide"]["dropped_short_or_markup"], 1);
  EXPECT_EQ(j["sources"]["gcide"]["words"], 5);
  EXPECT_EQ(j["sources"]["gcide"]["bytes"], 32);
  EXPECT_EQ(j["pairs"]["headword_definition"], 3);
  EXPECT_EQ(j["pairs"]["synonym"], 0);
  EXPECT_EQ(j["total"]["sentences"], 1);
  EXPECT_EQ(r.to_json()["total"]["pairs"], 3);
  // Asking for a missing source by name is an error; max_entries limits each source.
  o.sources = {Source::Gcide, Source::Foldoc};
  test::expect_error([&] { build_corpus(o); }, "source 'foldoc' is not available");
  o.sources = {Source::Gcide};
  o.max_entries = 1;
  EXPECT_EQ(build_corpus(o).sources.at(0).entries, 1u);
  test::expect_error([] { source_from_name("webster"); }, "unknown corpus source 'webster'");
}

TEST(BuildCorpus, Cli) {
  if (::access(test::cli_path().c_str(), X_OK) != 0) GTEST_SKIP() << "sieve executable not built";
  std::string dictd = make_fake_dictd();
  std::string out = test::make_temp_dir("corpus_cli") + "/out";
  auto r = test::run_command(test::cli_path() + " corpus build --out " + out + " --sources gcide --dictd " +
                             dictd + " 2>/dev/null");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["total"]["sentences"], 1);
  EXPECT_TRUE(is_file(out + "/pairs.jsonl"));
  auto bad = test::run_command(test::cli_path() + " corpus build --out " + out +
                               " --sources gcide,foldoc --dictd " + dictd + " 2>&1");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.out.find("apt install dict-foldoc"), std::string::npos) << bad.out;
  auto unknown =
      test::run_command(test::cli_path() + " corpus build --out " + out + " --sources webster 2>&1");
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_NE(unknown.out.find("unknown corpus source"), std::string::npos) << unknown.out;
}

// --- the real installed files ---------------------------------------------------------------------

constexpr const char* kDictd = "/usr/share/dictd";

TEST(RealData, GcideDogIsAQuadruped) {
  if (!is_file(std::string(kDictd) + "/gcide.index"))
    GTEST_SKIP() << "dict-gcide not installed (apt install dict-gcide)";
  DictdDatabase db = DictdDatabase::open(kDictd, "gcide");
  // `zcat gcide.dict.dz` shows "Dog \Dog\ (d[add]g or d[o^]g), n. [AS. docga; ..." whose sense 1 is
  // "(Zool.) A quadruped of the genus {Canis}, esp. the domestic dog ({Canis familiaris})."
  bool found = false;
  for (const auto* e : db.find("dog")) {
    Entry entry = clean_gcide_article(std::string(db.text(*e)));
    if (entry.headword != "dog" || entry.pos != "noun") continue;
    found = true;
    ASSERT_FALSE(entry.senses.empty());
    EXPECT_EQ(entry.senses[0].definition,
              "A quadruped of the genus Canis, esp. the domestic dog (Canis familiaris).");
    bool quadruped = false;
    for (const auto& s : entry_sentences(entry)) {
      quadruped = quadruped || s.find("quadruped") != std::string::npos;
      EXPECT_EQ(s.find_first_of("{}\\"), std::string::npos) << s;
      EXPECT_EQ(s.find("[1913 Webster]"), std::string::npos) << s;
    }
    EXPECT_TRUE(quadruped);
  }
  EXPECT_TRUE(found);
}

TEST(RealData, GcideArticlesCleanWithoutMarkup) {
  if (!is_file(std::string(kDictd) + "/gcide.index"))
    GTEST_SKIP() << "dict-gcide not installed (apt install dict-gcide)";
  DictdDatabase db = DictdDatabase::open(kDictd, "gcide");
  auto arts = db.articles();
  EXPECT_GT(arts.size(), 100000u);
  size_t with_pos = 0, n = 0, left = 0;
  for (size_t i = 0; i < arts.size(); i += 37, ++n) {  // a spread sample
    Entry e = clean_gcide_article(arts[i].text);
    with_pos += !e.pos.empty();
    for (const auto& s : entry_sentences(e)) left += s.find_first_of("{}\\") != std::string::npos;
  }
  EXPECT_GT(with_pos * 10, n * 8) << with_pos << " of " << n;  // most headers give a part of speech
  EXPECT_EQ(left, 0u);
}

TEST(RealData, FoldocAndWordNet) {
  if (is_file(std::string(kDictd) + "/foldoc.index")) {
    DictdDatabase db = DictdDatabase::open(kDictd, "foldoc");
    auto found = db.find("supercomputer");
    ASSERT_FALSE(found.empty());
    Entry e = clean_foldoc_article(std::string(db.text(*found[0])));
    ASSERT_FALSE(e.senses.empty());
    // FOLDOC: "<computer> A broad term for one of the fastest computers currently available."
    EXPECT_EQ(e.senses[0].definition, "A broad term for one of the fastest computers currently available.");
  } else {
    std::printf("[ SKIPPED  ] FOLDOC part: dict-foldoc not installed\n");
  }
  if (!nearmiss::Lexicon::available()) GTEST_SKIP() << "WordNet not installed (apt install wordnet-base)";
  auto entries = read_wordnet_entries(nearmiss::Lexicon::kDefaultDir);
  auto lex = nearmiss::Lexicon::load();
  // Same file order and gloss splitting as the lexicon: the same glosses and examples.
  std::vector<std::string> glosses, examples;
  for (const auto& e : entries)
    for (const auto& s : e.senses) {
      glosses.push_back(s.definition);
      examples.insert(examples.end(), s.examples.begin(), s.examples.end());
    }
  EXPECT_EQ(glosses, lex->glosses());
  EXPECT_EQ(examples, lex->example_sentences());
  // `grep '^02084071' /usr/share/wordnet/data.noun`: dog, domestic_dog, Canis_familiaris.
  auto dog = std::find_if(entries.begin(), entries.end(), [](const Entry& e) {
    return e.headword == "dog" && e.pos == "noun" && !e.synonyms.empty() && e.synonyms[0] == "domestic dog";
  });
  ASSERT_NE(dog, entries.end());
  EXPECT_EQ(dog->synonyms, (std::vector<std::string>{"domestic dog", "Canis familiaris"}));
  EXPECT_EQ(dog->senses[0].examples, (std::vector<std::string>{"the dog barked all night"}));
  EXPECT_EQ(read_wordnet_entries(nearmiss::Lexicon::kDefaultDir, 10).size(), 10u);
}

}  // namespace
}  // namespace sieve::corpus
