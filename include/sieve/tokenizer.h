// sieve: the Tokenizer interface (WordPiece as Hugging Face BERT, SentencePiece).
//
// Offsets are byte offsets [begin, end) into the UTF-8 text the caller passed (after invalid
// UTF-8 was replaced, see below); special tokens carry {0, 0}, as in Hugging Face.
// Invalid UTF-8 is not rejected: each invalid byte becomes U+FFFD, which BERT's text cleaning
// then drops, exactly as Python would after `bytes.decode("utf-8", "replace")`.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sieve {

/// One token of a text before framing: its vocabulary id, its string and its byte span.
struct TokenPiece {
  int32_t id = 0;
  std::string token;
  size_t begin = 0;
  size_t end = 0;
};

/// Ids of the special tokens a model uses; -1 when the vocabulary lacks one.
struct SpecialTokens {
  int32_t pad = -1, unk = -1, cls = -1, sep = -1, mask = -1;
};

/// Options for turning text into model input.
struct EncodeOptions {
  /// Total length cap including [CLS]/[SEP]; 0 means the tokenizer's model_max_length.
  size_t max_length = 0;
  /// Frame with [CLS] ... [SEP] (and [SEP] between pair members).
  bool add_special_tokens = true;
};

/// A framed, possibly truncated sequence ready for the encoder.
struct Encoding {
  std::vector<int32_t> ids;
  std::vector<int32_t> type_ids;        ///< 0 for the first text (and its [CLS]/[SEP]), 1 for the second
  std::vector<int32_t> attention_mask;  ///< 1 for real tokens, 0 for padding
  std::vector<std::string> tokens;
  std::vector<std::pair<size_t, size_t>> offsets;  ///< byte spans; {0,0} for specials/padding
  bool truncated = false;               ///< true when tokens were dropped to fit max_length
};

/// A batch padded to its longest member (right padding with [PAD], mask 0).
struct Batch {
  std::vector<Encoding> items;
  size_t seq_len = 0;  ///< padded length shared by all items
};

/// One element of a framing template: special tokens, or the tokens of the first or second text.
struct FramePart {
  int32_t sequence = -1;             ///< 0: first text, 1: second text, -1: the special tokens below
  std::vector<int32_t> ids;          ///< special token ids (sequence == -1 only)
  std::vector<std::string> tokens;   ///< their strings, one per id
  int32_t type_id = 0;               ///< type id of every token of this part
};

/// How encode()/encode_pair() frame texts, e.g. RoBERTa's `<s> A </s></s> B </s>` (a
/// tokenizer.json post-processor). Parts with sequence -1 are left out when
/// add_special_tokens is false.
struct Framing {
  std::vector<FramePart> single;  ///< template for one text
  std::vector<FramePart> pair;    ///< template for a pair
};

class Tokenizer;

/// The first `n` pieces of `tokenizer.tokenize(text)` (all of them when there are fewer), reading
/// no more of a long text than it needs: prefixes of it that end where whitespace follows a word,
/// growing until one gives more than `n` pieces. Every pre-tokenizer sieve reads (BERT's, byte-level
/// BPE's, Metaspace's, SentencePiece's) splits there, so a prefix's pieces are the whole text's
/// first ones; encode() uses it, so that a megabyte of text costs what the model reads of it.
std::vector<TokenPiece> tokenize_prefix(const Tokenizer& tokenizer, std::string_view text, size_t n);

/// Turns text into vocabulary ids. Immutable after construction; safe to share across threads.
class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  /// Splits text into tokens with ids and byte offsets, without special tokens or truncation.
  virtual std::vector<TokenPiece> tokenize(std::string_view text) const = 0;
  /// Id of a token string, or the [UNK] id when absent.
  virtual int32_t token_to_id(std::string_view token) const = 0;
  /// Token string of an id; throws sieve::Error when out of range.
  virtual std::string id_to_token(int32_t id) const = 0;
  /// Number of entries in the vocabulary.
  virtual size_t vocab_size() const = 0;
  /// Ids of the special tokens.
  virtual SpecialTokens special_tokens() const = 0;
  /// The model's maximum sequence length (tokenizer_config / sentence-transformers max_seq_length).
  virtual size_t model_max_length() const = 0;
  /// The framing encode()/encode_pair() apply; null (the default) means BERT's
  /// [CLS] a [SEP] b [SEP] with the ids of special_tokens().
  virtual const Framing* framing() const { return nullptr; }
  /// True when no token spans a space: cut where a space follows a non-space, a text's prefix
  /// tokenizes to the whole text's first tokens (tokenize_prefix relies on it; false: it
  /// tokenizes the whole text).
  virtual bool splits_at_spaces() const { return false; }

  /// Frames one text as [CLS] tokens [SEP] (or as framing() says), truncating the tokens to fit
  /// max_length.
  Encoding encode(std::string_view text, const EncodeOptions& opt = {}) const;
  /// Frames a pair as [CLS] a [SEP] b [SEP] with type ids 0/1; truncates the longer side first
  /// (Hugging Face's "longest_first").
  Encoding encode_pair(std::string_view a, std::string_view b, const EncodeOptions& opt = {}) const;
  /// Encodes each text and pads the batch to its longest member.
  Batch encode_batch(const std::vector<std::string>& texts, const EncodeOptions& opt = {}) const;

  /// Loads the tokenizer of a Hugging Face model directory: `tokenizer.json` (WordPiece models
  /// through the WordPiece tokenizer, any other model through load_tokenizer_json unless the
  /// folder also has a vocab.txt, or the file's normalizer is SentencePiece's Precompiled map and
  /// the folder has a SentencePiece model: those are used instead),
  /// else `vocab.txt`, else a SentencePiece `*.model`; `tokenizer_config.json` supplies
  /// do_lower_case / model_max_length. Throws sieve::Error when nothing usable is found.
  static std::unique_ptr<Tokenizer> from_model_dir(const std::string& dir);
};

/// Options of the WordPiece (BERT) tokenizer, mirroring Hugging Face's BertTokenizer.
struct WordPieceOptions {
  bool do_lower_case = true;           ///< lower-case and strip accents (uncased models)
  bool strip_accents_set = false;      ///< when true, `strip_accents` overrides do_lower_case's choice
  bool strip_accents = true;
  bool tokenize_chinese_chars = true;  ///< put spaces around CJK ideographs
  size_t max_input_chars_per_word = 100;
  size_t model_max_length = 512;
  std::string unk_token = "[UNK]";
  std::string continuing_prefix = "##";
};

/// Builds a WordPiece tokenizer from vocabulary lines (one token per line, id = line number).
std::unique_ptr<Tokenizer> make_wordpiece_tokenizer(std::vector<std::string> vocab,
                                                    const WordPieceOptions& opt = {});
/// Reads a `vocab.txt` file (one token per line).
std::vector<std::string> read_vocab_txt(const std::string& path);

/// Builds a SentencePiece tokenizer from a `.model` file; BERT-style framing uses the model's
/// [CLS]/[SEP]/[PAD]/[MASK] pieces when present, else <s>/</s>/<pad>/<mask>.
std::unique_ptr<Tokenizer> make_sentencepiece_tokenizer(const std::string& model_path,
                                                        size_t model_max_length = 512);

/// Options of load_tokenizer_json.
struct TokenizerJsonOptions {
  /// The model's maximum sequence length; 0 takes the file's truncation.max_length, else 512.
  size_t model_max_length = 0;
};

/// Reads a Hugging Face `tokenizer.json` with its whole pipeline: added tokens, normalizer,
/// pre-tokenizer, model (BPE, Unigram, WordPiece, WordLevel) and post-processor, which sets the
/// framing of encode()/encode_pair(). Throws sieve::Error naming the JSON path of anything it
/// cannot read or does not support (see docs/formats.md, "tokenizer.json").
std::unique_ptr<Tokenizer> load_tokenizer_json(const std::string& path,
                                               const TokenizerJsonOptions& opt = {});
/// Like load_tokenizer_json, from the file's text; `name` labels error messages.
std::unique_ptr<Tokenizer> parse_tokenizer_json(std::string_view text,
                                                const TokenizerJsonOptions& opt = {},
                                                const std::string& name = "tokenizer.json");

/// Trains a SentencePiece model with spm_train's flags ("--input=... --model_prefix=...
/// --vocab_size=..."); throws sieve::Error with SentencePiece's message on failure.
void train_sentencepiece(const std::string& flags);

}  // namespace sieve
