// The random BERT fixture: a complete Hugging Face + sentence-transformers model directory made
// from a seed, so that tests and benchmarks never need downloaded weights.
#include <sys/stat.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "core/file_util.h"
#include "sieve/error.h"
#include "sieve/model.h"
#include "sieve/safetensors.h"
#include "sieve/tokenizer.h"

namespace sieve {
namespace {

using nlohmann::json;

// splitmix64 + Box-Muller: portable, so a seed gives the same model on every platform.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  double uniform() { return (static_cast<double>(next() >> 11) + 0.5) * (1.0 / 9007199254740992.0); }
  float normal() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    double u1 = uniform(), u2 = uniform();
    double r = std::sqrt(-2.0 * std::log(u1));
    spare_ = static_cast<float>(r * std::sin(2.0 * M_PI * u2));
    has_spare_ = true;
    return static_cast<float>(r * std::cos(2.0 * M_PI * u2));
  }

 private:
  uint64_t state_;
  bool has_spare_ = false;
  float spare_ = 0.f;
};

const char* kWords[] = {
    "the", "a", "an", "and", "or", "not", "no", "is", "are", "was", "were", "be", "been", "has",
    "have", "had", "do", "does", "did", "can", "cannot", "will", "would", "should", "may", "of",
    "in", "on", "at", "to", "from", "by", "with", "without", "for", "over", "under", "above",
    "below", "left", "right", "behind", "front", "inside", "outside", "before", "after", "into",
    "man", "woman", "dog", "cat", "bird", "car", "house", "tree", "city", "river", "table", "chair",
    "book", "child", "children", "people", "water", "fire", "food", "road", "sky", "sun", "moon",
    "red", "blue", "green", "yellow", "black", "white", "big", "small", "old", "new", "good", "bad",
    "hot", "cold", "fast", "slow", "happy", "sad", "bit", "bites", "bite", "ate", "eat", "eats",
    "saw", "see", "sees", "ran", "run", "runs", "walk", "walks", "walked", "sat", "sits", "sit",
    "chased", "chases", "chase", "gave", "give", "took", "take", "made", "make", "found", "find",
    "search", "engine", "query", "document", "word", "words", "sentence", "meaning", "same",
    "different", "this", "that", "these", "those", "it", "he", "she", "they", "we", "you", "i",
    "his", "her", "their", "our", "my", "your", "its", "who", "what", "where", "when", "why", "how",
    "one", "two", "three", "four", "five", "many", "some", "all", "every", "each", "most", "few",
    "hello", "world", "example", "test", "model", "vector", "token", "score", "near", "far", "miss",
    "##s", "##ed", "##ing", "##ly", "##er", "##est", "##tion", "##ness", "##ment", "##able",
};

// GPT-2's byte-to-character table: printable Latin-1 bytes stand for themselves, the other
// bytes take the code points from 256 upwards in byte order. Returns each byte's UTF-8 text.
std::vector<std::string> byte_level_alphabet() {
  auto utf8 = [](uint32_t cp) {
    std::string s;
    if (cp < 0x80) {
      s += static_cast<char>(cp);
    } else {
      s += static_cast<char>(0xC0 | (cp >> 6));
      s += static_cast<char>(0x80 | (cp & 0x3F));
    }
    return s;
  };
  std::vector<std::string> out(256);
  uint32_t next = 256;
  for (uint32_t b = 0; b < 256; ++b) {
    bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    out[b] = utf8(printable ? b : next++);
  }
  return out;
}

// A tiny byte-level BPE tokenizer.json in RoBERTa's layout: <s> <pad> </s> <unk> first, the 256
// byte symbols, the fixture words (bare, then after the space marker) as chains of merges, <mask>
// last; plus tokenizer_config.json and special_tokens_map.json. Returns the vocabulary size.
size_t write_byte_level_bpe(const std::string& dir, size_t min_size, size_t max_seq_length) {
  const std::vector<std::string> bytes = byte_level_alphabet();
  std::vector<std::string> vocab;
  std::map<std::string, size_t> index;
  auto add = [&](const std::string& t) {
    if (index.count(t)) return;
    index[t] = vocab.size();
    vocab.push_back(t);
  };
  for (const char* t : {"<s>", "<pad>", "</s>", "<unk>"}) add(t);
  for (const auto& b : bytes) add(b);
  json merges = json::array();
  std::map<std::string, size_t> rank;  // "left right" -> merge rank
  const std::string space = bytes[' '];
  // BPE with the merges so far: the lowest-ranked adjacent pair merges first.
  auto bpe = [&](std::vector<std::string> sym) {
    for (;;) {
      size_t best = SIZE_MAX, at = 0;
      for (size_t i = 0; i + 1 < sym.size(); ++i) {
        auto it = rank.find(sym[i] + " " + sym[i + 1]);
        if (it != rank.end() && it->second < best) best = it->second, at = i;
      }
      if (best == SIZE_MAX) return sym;
      sym[at] += sym[at + 1];
      sym.erase(sym.begin() + static_cast<std::ptrdiff_t>(at) + 1);
    }
  };
  // Each word becomes one token, bare and after the space marker: whatever the earlier merges
  // make of it is joined left to right by new (higher-ranked, so later-applied) merges.
  auto make_token = [&](std::vector<std::string> sym) {
    sym = bpe(std::move(sym));
    std::string cur = sym[0];
    for (size_t i = 1; i < sym.size(); ++i) {
      std::string m = cur + " " + sym[i];
      if (!rank.count(m)) {
        rank[m] = merges.size();
        merges.push_back(m);
      }
      cur += sym[i];
      add(cur);
    }
  };
  for (const char* w : kWords) {
    if (w[0] == '#') continue;  // WordPiece continuations mean nothing here
    std::vector<std::string> letters;
    for (const char* c = w; *c; ++c) letters.emplace_back(1, *c);
    make_token(letters);
    letters.insert(letters.begin(), space);
    make_token(letters);
  }
  while (vocab.size() + 1 < min_size) add("<unused" + std::to_string(vocab.size()) + ">");
  add("<mask>");
  json v = json::object();
  for (size_t i = 0; i < vocab.size(); ++i) v[vocab[i]] = i;
  json added = json::array();
  for (const char* t : {"<s>", "<pad>", "</s>", "<unk>", "<mask>"})
    added.push_back({{"id", index[t]}, {"content", t}, {"single_word", false}, {"lstrip", std::string(t) == "<mask>"},
                     {"rstrip", false}, {"normalized", false}, {"special", true}});
  json tok = {{"version", "1.0"},
              {"truncation", nullptr},
              {"padding", nullptr},
              {"added_tokens", added},
              {"normalizer", nullptr},
              {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", true}}},
              {"post_processor", {{"type", "RobertaProcessing"}, {"sep", {"</s>", 2}}, {"cls", {"<s>", 0}},
                                  {"trim_offsets", true}, {"add_prefix_space", false}}},
              {"decoder", {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}, {"use_regex", true}}},
              {"model", {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", nullptr},
                         {"continuing_subword_prefix", ""}, {"end_of_word_suffix", ""}, {"fuse_unk", false},
                         {"byte_fallback", false}, {"ignore_merges", false}, {"vocab", v}, {"merges", merges}}}};
  write_file_atomic(path_join(dir, "tokenizer.json"), tok.dump(2) + "\n");
  json tok_cfg = {{"tokenizer_class", "RobertaTokenizer"}, {"model_max_length", max_seq_length},
                  {"bos_token", "<s>"}, {"eos_token", "</s>"}, {"unk_token", "<unk>"}, {"sep_token", "</s>"},
                  {"pad_token", "<pad>"}, {"cls_token", "<s>"}, {"mask_token", "<mask>"},
                  {"add_prefix_space", false}, {"errors", "replace"}};
  write_file_atomic(path_join(dir, "tokenizer_config.json"), tok_cfg.dump(2) + "\n");
  json special = {{"bos_token", "<s>"}, {"eos_token", "</s>"}, {"unk_token", "<unk>"}, {"sep_token", "</s>"},
                  {"pad_token", "<pad>"}, {"cls_token", "<s>"}, {"mask_token", "<mask>"}};
  write_file_atomic(path_join(dir, "special_tokens_map.json"), special.dump(2) + "\n");
  return vocab.size();
}

}  // namespace

std::vector<std::string> builtin_fixture_vocab(size_t size) {
  std::vector<std::string> v = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
  for (int c = 33; c < 127; ++c) {
    if (c >= 'A' && c <= 'Z') continue;  // the fixture vocabulary is uncased
    v.emplace_back(1, static_cast<char>(c));
  }
  for (int c = 33; c < 127; ++c) {
    if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) v.push_back(std::string("##") + static_cast<char>(c));
  }
  for (const char* w : kWords) v.emplace_back(w);
  for (size_t i = 0; v.size() < size; ++i) v.push_back("[unused" + std::to_string(i) + "]");
  return v;
}

// vocab.txt and the BertTokenizer configuration files.
static void write_bert_tokenizer_files(const std::string& dir, const std::vector<std::string>& vocab,
                                const FixtureModelOptions& opt) {
  std::string vocab_text;
  for (const auto& t : vocab) vocab_text += t + "\n";
  write_file_atomic(path_join(dir, "vocab.txt"), vocab_text);

  json tok_cfg = {{"tokenizer_class", "BertTokenizer"},
                  {"do_lower_case", opt.do_lower_case},
                  {"model_max_length", opt.max_seq_length},
                  {"unk_token", "[UNK]"}, {"sep_token", "[SEP]"}, {"pad_token", "[PAD]"},
                  {"cls_token", "[CLS]"}, {"mask_token", "[MASK]"},
                  {"tokenize_chinese_chars", true}, {"strip_accents", nullptr}};
  write_file_atomic(path_join(dir, "tokenizer_config.json"), tok_cfg.dump(2) + "\n");
  json special = {{"unk_token", "[UNK]"}, {"sep_token", "[SEP]"}, {"pad_token", "[PAD]"},
                  {"cls_token", "[CLS]"}, {"mask_token", "[MASK]"}};
  write_file_atomic(path_join(dir, "special_tokens_map.json"), special.dump(2) + "\n");

}

namespace {

void write_fixture_files(const std::string& dir, const FixtureModelOptions& opt) {
  ::mkdir(dir.c_str(), 0755);
  SIEVE_THROW_IF_NOT(is_dir(dir), "cannot create model directory '" << dir << "'");
  ::mkdir(path_join(dir, "1_Pooling").c_str(), 0755);

  BertConfig cfg = opt.config;
  const bool roberta = uses_roberta_positions(cfg);
  const bool modern = cfg.model_type == "modernbert";
  const bool mpnet = cfg.model_type == "mpnet";  // RoBERTa's positions (roberta is true too)
  SIEVE_THROW_IF_NOT(cfg.model_type == "bert" || roberta || modern,
                     "fixture model_type '" << cfg.model_type << "' is not supported (" << supported_model_types() << ")");
  std::vector<std::string> vocab;
  if (modern) {
    // The byte-level BPE as for RoBERTa (ModernBERT's own tokenizer is a BPE too); no token types.
    SIEVE_THROW_IF_NOT(opt.vocab_file.empty(), "a vocab.txt is for BERT fixtures; modernbert fixtures write their own BPE");
    cfg.pad_token_id = 1;
    cfg.type_vocab_size = 0;
    cfg.vocab_size = static_cast<int64_t>(
        write_byte_level_bpe(dir, static_cast<size_t>(std::max<int64_t>(0, cfg.vocab_size)), opt.max_seq_length));
  } else if (roberta) {
    SIEVE_THROW_IF_NOT(opt.vocab_file.empty(), "a vocab.txt is for BERT fixtures; roberta fixtures write their own BPE");
    // RoBERTa's conventions: <pad> = 1 is padding_idx, one token type, and the position table
    // holds padding_idx + 1 rows before the first position (roberta-base: 514 for 512 tokens).
    cfg.pad_token_id = 1;
    cfg.type_vocab_size = mpnet ? 0 : 1;
    cfg.max_position_embeddings += cfg.pad_token_id + 1;
    cfg.vocab_size = static_cast<int64_t>(
        write_byte_level_bpe(dir, static_cast<size_t>(std::max<int64_t>(0, cfg.vocab_size)), opt.max_seq_length));
  } else {
    vocab = opt.vocab_file.empty() ? builtin_fixture_vocab(static_cast<size_t>(opt.config.vocab_size))
                                   : read_vocab_txt(opt.vocab_file);
    SIEVE_THROW_IF_NOT(!vocab.empty(), "fixture vocabulary is empty");
    cfg.vocab_size = static_cast<int64_t>(vocab.size());
  }
  SIEVE_THROW_IF_NOT(cfg.hidden_size % cfg.num_attention_heads == 0,
                     "hidden size " << cfg.hidden_size << " must be a multiple of the head count "
                                    << cfg.num_attention_heads);
  SIEVE_THROW_IF_NOT(opt.max_seq_length <= static_cast<size_t>(max_sequence_length(cfg)),
                     "max_seq_length " << opt.max_seq_length << " exceeds the " << max_sequence_length(cfg)
                                       << " positions of max_position_embeddings "
                                       << opt.config.max_position_embeddings);

  // Parameters in a fixed order so the seed fully determines every value.
  struct Param {
    std::string name;
    std::vector<int64_t> shape;
    std::vector<float> values;
  };
  std::vector<Param> params;
  Rng rng(opt.seed);
  const int64_t H = cfg.hidden_size, I = cfg.intermediate_size;
  auto add = [&](const std::string& name, std::vector<int64_t> shape, float mean, float std) {
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    Param p{name, std::move(shape), std::vector<float>(static_cast<size_t>(n))};
    for (auto& x : p.values) x = mean + std * rng.normal();
    params.push_back(std::move(p));
  };
  // Linear weights scaled by fan-in so activations stay O(1) at any width.
  auto linear = [&](const std::string& name, int64_t out, int64_t in, bool bias = true) {
    float std = opt.init_std * std::sqrt(64.0f / static_cast<float>(in));
    add(name + ".weight", {out, in}, 0.f, std);
    if (bias) add(name + ".bias", {out}, 0.f, 0.5f * opt.init_std);
  };
  auto layer_norm = [&](const std::string& name, bool bias = true) {
    add(name + ".weight", {H}, 1.f, 0.1f);
    if (bias) add(name + ".bias", {H}, 0.f, 0.1f);
  };
  if (modern) {
    // ModernBERT's names: no position table (rotary), pre-norm layers, layer 0 without attn_norm.
    add("embeddings.tok_embeddings.weight", {cfg.vocab_size, H}, 0.f, 1.0f);
    layer_norm("embeddings.norm", cfg.norm_bias);
    for (int64_t l = 0; l < cfg.num_hidden_layers; ++l) {
      std::string p = "layers." + std::to_string(l) + ".";
      if (l > 0) layer_norm(p + "attn_norm", cfg.norm_bias);
      linear(p + "attn.Wqkv", 3 * H, H, cfg.attention_bias);
      linear(p + "attn.Wo", H, H, cfg.attention_bias);
      layer_norm(p + "mlp_norm", cfg.norm_bias);
      linear(p + "mlp.Wi", 2 * I, H, cfg.mlp_bias);
      linear(p + "mlp.Wo", H, I, cfg.mlp_bias);
    }
    layer_norm("final_norm", cfg.norm_bias);
  } else {
    // BERT / RoBERTa and MPNet: the same shapes; MPNet names its attention attention.attn.{q,k,v,o}
    // with attention.LayerNorm, has no token types, and one relative bias table after the layers.
    add("embeddings.word_embeddings.weight", {cfg.vocab_size, H}, 0.f, 1.0f);
    add("embeddings.position_embeddings.weight", {cfg.max_position_embeddings, H}, 0.f, 0.5f);
    if (!mpnet && cfg.type_vocab_size > 0)
      add("embeddings.token_type_embeddings.weight", {cfg.type_vocab_size, H}, 0.f, 0.5f);
    layer_norm("embeddings.LayerNorm");
    for (int64_t l = 0; l < cfg.num_hidden_layers; ++l) {
      std::string p = "encoder.layer." + std::to_string(l) + ".";
      linear(p + (mpnet ? "attention.attn.q" : "attention.self.query"), H, H);
      linear(p + (mpnet ? "attention.attn.k" : "attention.self.key"), H, H);
      linear(p + (mpnet ? "attention.attn.v" : "attention.self.value"), H, H);
      linear(p + (mpnet ? "attention.attn.o" : "attention.output.dense"), H, H);
      layer_norm(p + (mpnet ? "attention.LayerNorm" : "attention.output.LayerNorm"));
      linear(p + "intermediate.dense", I, H);
      linear(p + "output.dense", H, I);
      layer_norm(p + "output.LayerNorm");
    }
    if (mpnet)
      add("encoder.relative_attention_bias.weight", {cfg.relative_attention_num_buckets, cfg.num_attention_heads}, 0.f,
          1.0f);
    linear("pooler.dense", H, H);
  }

  std::vector<std::vector<uint16_t>> halves;
  std::vector<TensorToWrite> tensors;
  halves.reserve(params.size());
  for (const auto& p : params) {
    TensorToWrite t;
    t.name = (opt.bert_prefix ? (modern ? "model." : mpnet ? "mpnet." : roberta ? "roberta." : "bert.") : "") + p.name;
    t.shape = p.shape;
    if (opt.fp16) {
      halves.emplace_back(p.values.size());
      for (size_t i = 0; i < p.values.size(); ++i) halves.back()[i] = float_to_half(p.values[i]);
      t.dtype = DType::F16;
      t.data = halves.back().data();
      t.nbytes = halves.back().size() * 2;
    } else {
      t.dtype = DType::F32;
      t.data = p.values.data();
      t.nbytes = p.values.size() * 4;
    }
    tensors.push_back(t);
  }
  write_safetensors(path_join(dir, "model.safetensors"), tensors, {{"format", "pt"}});

  write_file_atomic(path_join(dir, "config.json"), bert_config_to_json(cfg));
  if (!roberta && !modern) write_bert_tokenizer_files(dir, vocab, opt);

  json modules = json::array();
  modules.push_back({{"idx", 0}, {"name", "0"}, {"path", ""}, {"type", "sentence_transformers.models.Transformer"}});
  modules.push_back({{"idx", 1}, {"name", "1"}, {"path", "1_Pooling"}, {"type", "sentence_transformers.models.Pooling"}});
  if (opt.normalize_module)
    modules.push_back({{"idx", 2}, {"name", "2"}, {"path", "2_Normalize"}, {"type", "sentence_transformers.models.Normalize"}});
  write_file_atomic(path_join(dir, "modules.json"), modules.dump(2) + "\n");
  json pooling = {{"word_embedding_dimension", H},
                  {"pooling_mode_cls_token", opt.pooling == Pooling::Cls},
                  {"pooling_mode_mean_tokens", opt.pooling == Pooling::Mean},
                  {"pooling_mode_max_tokens", false},
                  {"pooling_mode_mean_sqrt_len_tokens", false},
                  {"pooling_mode_weightedmean_tokens", false},
                  {"pooling_mode_lasttoken", opt.pooling == Pooling::LastToken},
                  {"include_prompt", true}};
  write_file_atomic(path_join(dir, "1_Pooling/config.json"), pooling.dump(2) + "\n");
  json sbert = {{"max_seq_length", opt.max_seq_length}, {"do_lower_case", false}};
  write_file_atomic(path_join(dir, "sentence_bert_config.json"), sbert.dump(2) + "\n");
  json st = {{"__version__", {{"sentence_transformers", "2.2.2"}, {"pytorch", "1.13.1"}}},
             {"prompts", json::object()}, {"default_prompt_name", nullptr}, {"similarity_fn_name", "cosine"}};
  write_file_atomic(path_join(dir, "config_sentence_transformers.json"), st.dump(2) + "\n");
}

}  // namespace

void write_fixture_model(const std::string& dir, const FixtureModelOptions& opt) {
  // A folder this call creates is removed again when the model cannot be written whole (a bad
  // option is found after the tokenizer files are out), so no half model is left behind.
  const bool existed = is_dir(dir);
  try {
    write_fixture_files(dir, opt);
  } catch (...) {
    if (!existed) {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    }
    throw;
  }
}

}  // namespace sieve
