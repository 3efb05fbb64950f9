// The random BERT fixture: a complete Hugging Face + sentence-transformers model directory made
// from a seed, so that tests and benchmarks never need downloaded weights.
#include <sys/stat.h>

#include <cmath>
#include <cstring>
#include <fstream>
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

void write_fixture_model(const std::string& dir, const FixtureModelOptions& opt) {
  ::mkdir(dir.c_str(), 0755);
  SIEVE_THROW_IF_NOT(is_dir(dir), "cannot create model directory '" << dir << "'");
  ::mkdir(path_join(dir, "1_Pooling").c_str(), 0755);

  std::vector<std::string> vocab =
      opt.vocab_file.empty() ? builtin_fixture_vocab(static_cast<size_t>(opt.config.vocab_size))
                             : read_vocab_txt(opt.vocab_file);
  SIEVE_THROW_IF_NOT(!vocab.empty(), "fixture vocabulary is empty");
  BertConfig cfg = opt.config;
  cfg.vocab_size = static_cast<int64_t>(vocab.size());
  SIEVE_THROW_IF_NOT(cfg.hidden_size % cfg.num_attention_heads == 0,
                     "hidden size " << cfg.hidden_size << " must be a multiple of the head count "
                                    << cfg.num_attention_heads);
  SIEVE_THROW_IF_NOT(opt.max_seq_length <= static_cast<size_t>(cfg.max_position_embeddings),
                     "max_seq_length exceeds max_position_embeddings");

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
  auto linear = [&](const std::string& name, int64_t out, int64_t in) {
    float std = opt.init_std * std::sqrt(64.0f / static_cast<float>(in));
    add(name + ".weight", {out, in}, 0.f, std);
    add(name + ".bias", {out}, 0.f, 0.5f * opt.init_std);
  };
  auto layer_norm = [&](const std::string& name) {
    add(name + ".weight", {H}, 1.f, 0.1f);
    add(name + ".bias", {H}, 0.f, 0.1f);
  };
  add("embeddings.word_embeddings.weight", {cfg.vocab_size, H}, 0.f, 1.0f);
  add("embeddings.position_embeddings.weight", {cfg.max_position_embeddings, H}, 0.f, 0.5f);
  if (cfg.type_vocab_size > 0) add("embeddings.token_type_embeddings.weight", {cfg.type_vocab_size, H}, 0.f, 0.5f);
  layer_norm("embeddings.LayerNorm");
  for (int64_t l = 0; l < cfg.num_hidden_layers; ++l) {
    std::string p = "encoder.layer." + std::to_string(l) + ".";
    linear(p + "attention.self.query", H, H);
    linear(p + "attention.self.key", H, H);
    linear(p + "attention.self.value", H, H);
    linear(p + "attention.output.dense", H, H);
    layer_norm(p + "attention.output.LayerNorm");
    linear(p + "intermediate.dense", I, H);
    linear(p + "output.dense", H, I);
    layer_norm(p + "output.LayerNorm");
  }
  linear("pooler.dense", H, H);

  std::vector<std::vector<uint16_t>> halves;
  std::vector<TensorToWrite> tensors;
  halves.reserve(params.size());
  for (const auto& p : params) {
    TensorToWrite t;
    t.name = (opt.bert_prefix ? "bert." : "") + p.name;
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

}  // namespace sieve
