// sieve: training. Contrastive dual-encoder training (the paper's Model A / Model B), MLM
// pretraining of a new BERT, and verifier training (frozen and end to end). Everything writes
// model directories in Hugging Face + sentence-transformers layout and metrics as JSON lines.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "sieve/model.h"
#include "sieve/verify.h"

namespace sieve {

/// Options shared by every trainer.
struct TrainCommon {
  std::string out_dir;          ///< output directory (created; see docs/training.md for its layout)
  size_t steps = 1000;          ///< optimizer steps (the schedule's length)
  double seconds = 0;           ///< > 0: also stop after this much wall-clock training time
  size_t stop_after = 0;        ///< > 0: stop this invocation at this step (resume later with `resume`)
  size_t batch_size = 32;
  double warmup_ratio = 0.1;    ///< linear warm-up over ceil(ratio * steps) steps, then linear decay to 0
  double clip_norm = 1.0;       ///< gradient-norm clipping (per parameter group); <= 0: off
  uint64_t seed = 42;
  size_t log_every = 10;        ///< metrics line every N steps
  size_t save_every = 0;        ///< resumable checkpoint every N steps (0: only at the end)
  bool resume = false;          ///< continue from the newest checkpoint in out_dir
  std::string device = "cpu";
  int threads = 0;              ///< compute threads; 0 = all cores
  bool progress = true;         ///< progress line on stderr (only when it is a terminal)
  // Data parallelism (torch.distributed, Gloo): `world_size` processes each take a contiguous
  // share of every global batch of `batch_size` rows; rank 0 alone writes OUT. The CLI's
  // --world-size starts the processes (docs/training.md).
  int world_size = 1;
  int rank = 0;
  std::string dist_store;       ///< rendezvous: "file:PATH" or "tcp:HOST:PORT"
  std::string gradients_file;   ///< diagnostic: write the first step's gradients (after the data-parallel sum) here
};

/// `sieve train encoder`: InfoNCE with in-batch negatives plus every row's hard negatives as
/// extra columns (sentence-transformers' MultipleNegativesRankingLoss), AdamW.
struct EncoderTrainOptions {
  TrainCommon common;
  std::string model_dir;        ///< the model to start from (HF + sentence-transformers layout)
  std::string train_path;       ///< triplet/pair file, or a BEIR folder (its train qrels)
  bool identity_pairs = false;  ///< pairs become identity triplets (anchor = positive = sentence1)
  double lr = 2e-5;
  double weight_decay = 0.01;
  double scale = 10.0;          ///< logit scale = 1 / temperature (the paper's script: 10)
  bool symmetric = false;       ///< also the positive -> anchor direction (averaged)
  size_t max_length = 0;        ///< token cap; 0 = the model's max_seq_length
  std::string eval_dir;         ///< BEIR folder for periodic nDCG@10 (empty: no evaluation)
  std::string eval_split = "test";
  size_t eval_every = 0;        ///< steps between evaluations (0: at the start and the end only)
  size_t eval_max_queries = 200;
  double dropout = 0.1;         ///< encoder dropout while training
};

/// What a trainer did.
struct TrainReport {
  size_t steps = 0;             ///< optimizer steps taken in total (including resumed ones)
  double seconds = 0;           ///< wall-clock training time of this invocation
  double samples_per_second = 0;
  double first_loss = 0, last_loss = 0;  ///< mean loss over the first / last logged window
  double best_metric = -1;      ///< best evaluation (nDCG@10), -1 without evaluation
  size_t best_step = 0;
  std::string final_dir;        ///< the model directory (or verifier file) written at the end
  bool skipped = false;         ///< nothing to train (frozen F0-F2)
};

/// True when `out_dir` holds a resumable checkpoint of a run (TrainCommon::resume would find one).
bool has_checkpoint(const std::string& out_dir);

/// Trains an encoder; throws sieve::Error for bad options or data (before any work is done).
TrainReport train_encoder(const EncoderTrainOptions& options);

/// `sieve train mlm`: masked-language-model pretraining of a new BERT from a config (random
/// initialisation as Hugging Face does: N(0, 0.02) weights, zero biases, unit LayerNorms).
/// Sentences are packed into full sequences; masking is dynamic (15% of tokens, of which 80%
/// become [MASK], 10% a random token, 10% stay).
struct MlmTrainOptions {
  TrainCommon common;
  BertConfig config;                    ///< the new model (vocab_size is set from the vocabulary)
  std::string vocab_file;               ///< vocab.txt (WordPiece)
  std::vector<std::string> text_files;  ///< one sentence per line; a blank line ends a document
  std::string init_dir;                 ///< continue from this model instead of a random init
  size_t seq_len = 128;                 ///< tokens per packed sequence, [CLS] and [SEP] included
  double mask_prob = 0.15;
  double lr = 1e-4;
  double weight_decay = 0.01;
  double init_range = 0.02;
  Pooling pooling = Pooling::Mean;      ///< written to 1_Pooling for sentence-transformers
};

/// Pretrains; OUT/last (and checkpoints) are model directories with the MLM head (BertForMaskedLM
/// names) that sieve and Hugging Face load as encoders.
TrainReport train_mlm(const MlmTrainOptions& options);

/// What a verifier's loss compares.
enum class VerifierObjective {
  InfoNCE,  ///< the paper's: each anchor against every in-batch positive and its own hard negative
  Pairs,    ///< labelled pairs (sentence1, sentence2, label): binary cross-entropy of score / tau
};

/// How a verifier is trained (paper.md, "frozen vs end to end").
enum class VerifierRegime {
  Frozen,     ///< only the verifier learns; the encoder's token states are computed once and cached
  EndToEnd,   ///< encoder and verifier learn together (separate learning rates, decays, clipping)
};

/// `sieve train verifier`: the paper's loss, in-batch InfoNCE over verifier scores (each anchor
/// against every positive of the batch and its own hard negative), temperature `tau`.
struct VerifierTrainOptions {
  TrainCommon common;
  std::string model_dir;        ///< the encoder
  std::string train_path;       ///< triplets, or pairs (read as identity triplets, as the paper does)
  VerifierConfig verifier;      ///< kind and sizes (encoder_dim and identity are filled in)
  VerifierRegime regime = VerifierRegime::Frozen;
  /// Pairs: rows are labelled pairs (label 1 = same meaning), or triplets read as (anchor,
  /// positive, 1) and (anchor, negative, 0); the loss is the BCE of score / tau, so that score 0
  /// is the boundary. A gate judges pairs one at a time, and this is that task.
  VerifierObjective objective = VerifierObjective::InfoNCE;
  /// Pairs objective: each pair is read in either order (drawn per step and row from the seed),
  /// so that the verifier learns a judgement that does not depend on which side is the query.
  bool swap_sides = true;
  double tau = 0.1;
  /// Frozen regime: the folder of the float16 token-state cache (reused by every run with the same
  /// encoder and --max-length); "" = OUT/token-cache.
  std::string token_cache;
  /// Frozen regime: the engine that computes the token states (Auto: the native pass for the BERT
  /// family). A test that must not move with the native pass's last bits pins Torch.
  Engine engine = Engine::Auto;
  /// Weight of a pointwise term (BCE of score / tau: own positive 1, own hard negative 0) added to
  /// the InfoNCE; 0 = the paper's loss alone.
  double pointwise_weight = 0.0;
  /// InfoNCE: maps scored per forward and backward pass. A step scores b x B in-batch maps and b
  /// own negatives; they go through in shares of whole anchor rows (at least one) so that memory
  /// stays bounded, with the same summed gradients. F3's batch norm normalises each share by
  /// itself, as it does each rank's share under data parallelism.
  size_t maps_per_pass = 64;
  double lr_verifier = 1e-4, weight_decay_verifier = 0.01;
  double lr_encoder = 1e-5, weight_decay_encoder = 0.01;
  size_t max_length = 128;      ///< encoder token cap
  double dropout = 0.1;         ///< encoder dropout (end to end)
};

/// Trains a verifier; writes OUT/verifier.safetensors (and, end to end, the encoder in OUT/encoder,
/// which the verifier file names as its encoder). Frozen training of F0-F2 (no parameters) is
/// skipped: the report says so and the file holds the parameter-free verifier.
TrainReport train_verifier(const VerifierTrainOptions& options);

/// `sieve train cross-encoder`: a BERT cross-encoder (BertForSequenceClassification, one label)
/// from an encoder's weights, trained with binary cross-entropy on the logit (what
/// sentence-transformers' CrossEncoder.fit does for one label), AdamW. The pooler comes from the
/// encoder when it has one; the pooler otherwise and the classifier start as Hugging Face
/// initialises them (N(0, 0.02) from the seed, zero biases). A cross-encoder folder continues
/// training as it is.
struct CrossEncoderTrainOptions {
  TrainCommon common;
  std::string model_dir;        ///< the encoder (or cross-encoder) to start from (BERT, HF layout)
  /// Labelled pairs (sentence1, sentence2, label: 1/0, same/different, ...), or triplets
  /// (anchor, positive, negative), read as (anchor, positive, 1) and (anchor, negative, 0).
  std::string train_path;
  double lr = 2e-5;
  double weight_decay = 0.01;
  size_t max_length = 0;        ///< pair token cap; 0 = the tokenizer's model_max_length (512), as CrossEncoder
  double dropout = 0.1;
  /// false: the rows in file order, epoch after epoch (a DataLoader without shuffling; used to
  /// prove the trainer step for step against CrossEncoder.fit); true: each epoch shuffled from the seed.
  bool shuffle = true;
};

/// Trains a cross-encoder; OUT/last (and checkpoints) are folders in Hugging Face's
/// BertForSequenceClassification layout (config.json, model.safetensors, tokenizer files) with
/// the sieve file sieve_cross_encoder.json (base encoder, threshold); `CrossEncoder(OUT/last)` of
/// sentence-transformers loads them.
TrainReport train_cross_encoder(const CrossEncoderTrainOptions& options);

}  // namespace sieve
