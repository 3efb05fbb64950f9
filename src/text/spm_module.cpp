// libsieve_spm: the SentencePiece backend, built as a separate module and loaded at run time.
//
// Why a module: libsentencepiece carries its own copy of protobuf-lite and exports its symbols,
// while libtorch links the system libprotobuf. Linked into one executable, the two copies bind
// to each other's symbols and the process crashes before main(). Loading this module with
// RTLD_DEEPBIND (see sentencepiece_tokenizer.cpp) keeps sentencepiece on its own protobuf.
// The module exports two C functions and nothing else.
#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>
#include <sys/stat.h>

#include <cstring>
#include <string>
#include <vector>

#include "sieve/error.h"
#include "sieve/tokenizer.h"

namespace sieve {

class SentencePieceTokenizer final : public Tokenizer {
 public:
  SentencePieceTokenizer(const std::string& model_path, size_t model_max_length)
      : model_max_length_(model_max_length) {
    struct stat st {};
    SIEVE_THROW_IF_NOT(::stat(model_path.c_str(), &st) == 0 && S_ISREG(st.st_mode),
                       "SentencePiece model not found: '" << model_path << "'");
    SIEVE_THROW_IF_NOT(model_max_length_ > 0, "model_max_length must be positive");
    auto status = sp_.Load(model_path);
    SIEVE_THROW_IF_NOT(status.ok(), "cannot load SentencePiece model '" << model_path
                                                                         << "': " << status.ToString());
    size_ = size_t(sp_.GetPieceSize());
    SIEVE_THROW_IF_NOT(size_ > 0, "SentencePiece model '" << model_path << "' has no pieces");
    // BERT-style names first (models trained for BERT framing), then SentencePiece's own.
    special_.cls = first_of({"[CLS]", "<s>"}, sp_.bos_id());
    special_.sep = first_of({"[SEP]", "</s>"}, sp_.eos_id());
    special_.pad = first_of({"[PAD]", "<pad>"}, sp_.pad_id());
    special_.mask = first_of({"[MASK]", "<mask>"}, -1);
    special_.unk = first_of({"[UNK]", "<unk>"}, sp_.unk_id());
  }

  std::vector<TokenPiece> tokenize(std::string_view text) const override {
    auto spt = sp_.EncodeAsImmutableProto(text);
    std::vector<TokenPiece> out;
    out.reserve(spt.pieces_size());
    for (const auto& p : spt.pieces()) {
      int32_t id = int32_t(p.id());
      // SentencePiece reports unknown characters with its own unk id; report the unk this
      // tokenizer advertises so callers see one id for "unknown".
      if (sp_.IsUnknown(id) && special_.unk >= 0) id = special_.unk;
      out.push_back({id, p.piece(), size_t(p.begin()), size_t(p.end())});
    }
    return out;
  }

  int32_t token_to_id(std::string_view token) const override {
    int32_t id = find(token);
    return id >= 0 ? id : special_.unk;
  }

  std::string id_to_token(int32_t id) const override {
    SIEVE_THROW_IF_NOT(id >= 0 && size_t(id) < size_,
                       "token id " << id << " out of range [0, " << size_ << ")");
    return sp_.IdToPiece(id);
  }

  size_t vocab_size() const override { return size_; }
  SpecialTokens special_tokens() const override { return special_; }
  size_t model_max_length() const override { return model_max_length_; }

 private:
  // Id of a piece, or -1: PieceToId answers the unk id for pieces it lacks.
  int32_t find(std::string_view piece) const {
    int id = sp_.PieceToId(piece);
    if (id < 0 || size_t(id) >= size_) return -1;
    return sp_.IdToPiece(id) == piece ? int32_t(id) : -1;
  }

  int32_t first_of(std::initializer_list<const char*> names, int fallback) const {
    for (const char* n : names) {
      int32_t id = find(n);
      if (id >= 0) return id;
    }
    return fallback >= 0 && size_t(fallback) < size_ ? int32_t(fallback) : -1;
  }

  sentencepiece::SentencePieceProcessor sp_;
  size_t size_ = 0;
  size_t model_max_length_;
  SpecialTokens special_;
};

}  // namespace sieve

namespace {
void copy_error(const char* msg, char* err, size_t err_len) {
  if (err == nullptr || err_len == 0) return;
  std::strncpy(err, msg, err_len - 1);
  err[err_len - 1] = '\0';
}
}  // namespace

/// Creates a SentencePiece tokenizer; returns nullptr and fills `err` on failure.
extern "C" __attribute__((visibility("default"))) sieve::Tokenizer* sieve_spm_create(
    const char* model_path, size_t model_max_length, char* err, size_t err_len) {
  try {
    return new sieve::SentencePieceTokenizer(model_path, model_max_length);
  } catch (const std::exception& e) {
    copy_error(e.what(), err, err_len);
  }
  return nullptr;
}

/// Trains a SentencePiece model from spm_train-style flags; returns 0, or 1 and fills `err`.
extern "C" __attribute__((visibility("default"))) int sieve_spm_train(const char* flags, char* err,
                                                                      size_t err_len) {
  try {
    auto status = sentencepiece::SentencePieceTrainer::Train(flags);
    if (status.ok()) return 0;
    copy_error(status.ToString().c_str(), err, err_len);
  } catch (const std::exception& e) {
    copy_error(e.what(), err, err_len);
  }
  return 1;
}
