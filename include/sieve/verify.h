// sieve: stage 2, verifiers over the token-token cosine map M(q, c) (paper.md, "Stage 2").
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sieve/cross_encoder.h"
#include "sieve/encoder.h"

namespace sieve {

/// The verifier families: parameter-free F0 (mean of M), F1 (MaxSim), F2 (soft alignment), the
/// learned F3 (CNN over phi(M)) and F4 (Transformer over patches of phi(M)), and Mlp: a small
/// network (one tanh hidden layer, or none: logistic regression) over fixed features of the pair
/// (gate_features(): cosines of the map and of the pooled rows, exact-id overlap, order, voice and
/// negation cues), fitted on labelled pairs (scripts/fit-gate.py).
enum class VerifierKind { F0, F1, F2, F3, F4, Mlp };
/// "F0".."F4", "mlp"; verifier_kind_from_name accepts any case and throws sieve::Error otherwise.
const char* verifier_kind_name(VerifierKind k);
VerifierKind verifier_kind_from_name(const std::string& name);

/// F2: A_ij = softmax_j((M_ij - lambda |i - j|) / tau); score = mean_i sum_j A_ij M_ij.
struct F2Options {
  double lambda = 0.1;
  double tau = 0.1;
  double bandwidth = -1;   ///< < 0: no band; else keep entries with lambda |i - j| <= bandwidth
  double gamma_mono = 0;   ///< > 0: subtract gamma * mean ReLU(p_i - p_{i+1})^2 (monotonicity)
};

/// F3: blocks of Conv(k x k, hidden * 2^b) - BatchNorm - ReLU - MaxPool 2, global average pool,
/// Linear - ReLU - Dropout - Linear, tanh. The defaults are the paper's (332,545 parameters).
struct F3Options {
  int hidden = 128;
  int kernel = 3;
  int blocks = 2;
  int mlp_hidden = 128;
  bool augmented = true;   ///< channels [M, row max, column max]; false: [M]
  double dropout = 0.1;
  bool exact_match = false;  ///< one more channel: E_ij = 1 where the two tokens' ids are equal
};

/// Cue words as exact runs of vocabulary ids, one run per form of a word: {"not"} is one piece,
/// WordPiece's "n't" is the two pieces {"'", "t"}, byte-level BPE's the one piece {"'t"}. A token
/// is a cue only inside a whole run, so the "t" of "T cells" is not one (negation_cues()).
using CueSequences = std::vector<std::vector<int32_t>>;

/// F4: 8x8 conv patches of phi(M) -> [CLS] + learned positions -> LayerNorm -> pre-LN encoder
/// layers -> Linear - GELU - Linear on [CLS], tanh. The defaults are the paper's (940,065
/// parameters at width 384); width 0 = the encoder's width.
struct F4Options {
  int width = 0;
  int layers = 1;
  int heads = 1;
  int ff = 32;
  int patch = 8;
  bool augmented = true;
  double dropout = 0.1;
  /// One more channel beside phi(M): E_ij = 1 where query token i and candidate token j have the
  /// same id (a lexical alignment the contextual cosines blur; an extension of the paper's phi).
  /// The verifier then needs the token ids with the states (TokenStates::ids).
  bool exact_match = false;
  /// Cue words (negation cues: not, no, never, n't, ...) as id runs. Non-empty: one more channel,
  /// K_ij = cue(query token i) + cue(candidate token j) on valid pairs, which says what the
  /// cosines cannot: which unmatched word is a cue. Needs the token ids, as exact_match does.
  CueSequences cue_ids;
};

/// Optional score mode: final = F1 - beta * sigmoid(20 (F1 - tau_p)) * (1 - raw).
struct PenaltyOptions {
  bool enabled = false;
  double beta = 0.5;
  double tau_p = 0.9;
};

/// Optional term for any kind: score -= weight * |cues in the query - cues in the candidate|
/// (whole runs of `ids` among the tokens kept by max_tokens: negation cues). A meaning flip that
/// the cosines barely see ("did" / "did not") costs a fixed amount; needs the token ids.
struct CuePenaltyOptions {
  double weight = 0;  ///< 0: off
  CueSequences ids;
};

/// Optional term for any kind: score -= weight * |crossed - voice| * share^2, where crossed = 1
/// when the words found once on each side (same token id) come in another order in the candidate
/// (a role swap, or a passive's reordering), voice = 1 when the two sides hold the voice cue
/// words (`voice_ids`: "by") a different number of times (a passive on one side only), and share
/// = the fraction of the query's tokens whose id the candidate holds. A reordering is then
/// expected exactly when the voice changed: "the dog bit the man" / "the man bit the dog" and
/// "... fumbled the snap" / "... was fumbled by the snap" pay in full (every word kept), the true
/// passive does not, and a reworded paraphrase that moves a clause pays little. What the cosines
/// of contextual states cannot see: a role swap keeps every word and nearly every state. Needs
/// the token ids.
struct OrderPenaltyOptions {
  double weight = 0;  ///< 0: off
  std::vector<int32_t> voice_ids;
};

/// The Mlp kind over the features x = gate_features() of the pair (of both directions, averaged,
/// when the verifier is symmetric): z = (x - mean) / scale, h = tanh(hidden_weights z +
/// hidden_bias) (H = hidden_bias.size() units; H = 0: h = z), score = sigmoid(weights . h + bias).
/// The feature set is versioned by its names: a file whose names differ from gate_feature_names()
/// is refused. Needs the token ids (cues, voice, exact overlap).
struct MlpGateOptions {
  CueSequences cue_ids;               ///< negation cues (negation_cues())
  std::vector<int32_t> voice_ids;     ///< voice cue words (voice_cue_ids())
  std::vector<int32_t> conj_ids;      ///< coordinating conjunctions (conjunction_ids())
  // Format 8 (issue 57); empty in older files, whose features do not read them.
  std::vector<int32_t> question_ids;  ///< the question mark's pieces ("question")
  std::vector<int32_t> wh_ids;        ///< wh-words ("wh_gap")
  std::vector<int32_t> number_ids;    ///< numbers and month names ("num_gap")
  std::vector<std::pair<int32_t, int32_t>> opposite_ids;  ///< opposite words, both orders ("opposite")
  /// The fitted feature names: a prefix of gate_feature_names() (a file fitted before a feature
  /// was added names fewer, and reads only its own).
  std::vector<std::string> features;
  std::vector<double> mean, scale;    ///< F each
  std::vector<double> hidden_weights; ///< H x F, row-major
  std::vector<double> hidden_bias;    ///< H
  std::vector<double> weights;        ///< H (F when H = 0)
  double bias = 0;
  /// Empty, or F weights of a linear path from z straight to the logit (a base the hidden layer
  /// corrects: scripts/fit-gate.py --skip): logit = weights . h + bias + skip_weights . z + skip_bias.
  std::vector<double> skip_weights;
  /// true (scripts/fit-gate.py --veto): the skip path is the base and the hidden layer can only
  /// lower it: logit = skip_weights . z + skip_bias - softplus(weights . h + bias). Needs skip_weights.
  bool veto = false;
  double skip_bias = 0;
};

/// Everything that defines a verifier (stored with its weights).
struct VerifierConfig {
  VerifierKind kind = VerifierKind::F1;
  size_t max_tokens = 128;        ///< tokens kept per side (the map is padded to this for F3/F4)
  size_t encoder_dim = 0;         ///< token-state width the verifier reads
  std::string encoder_identity;   ///< model_identity() of the encoder; empty = any (F0-F2)
  F2Options f2;
  F3Options f3;
  F4Options f4;
  PenaltyOptions penalty;
  CuePenaltyOptions cue_penalty;
  OrderPenaltyOptions order_penalty;
  MlpGateOptions mlp;  ///< the Mlp kind's features and weights
  /// true: the score is the mean of the two directions, (score(query, candidate) + score(candidate,
  /// query)) / 2, penalties included, so that it does not depend on which side is the query (a
  /// passive query against its active candidate scores what the active query scores against the
  /// passive). Twice the scoring work; the maps are transposed, not built again.
  bool symmetric = false;
  double threshold = std::numeric_limits<double>::quiet_NaN();  ///< gate threshold (calibrated)
};

/// True when the verifier reads token ids beside the states (F3/F4 with the exact-match channel,
/// F4 with the cue channel, any kind with the cue or order penalty).
bool reads_token_ids(const VerifierConfig& c);

/// Where one score() call spent its time (seconds): building the maps, running the verifier.
struct ScoreTiming {
  double map = 0, model = 0;
};

/// A verifier. Immutable after creation; score() may be called from several threads.
class Verifier {
 public:
  virtual ~Verifier() = default;
  virtual const VerifierConfig& config() const = 0;
  /// Number of learned parameters (0 for F0-F2).
  virtual size_t parameter_count() const = 0;
  /// Scores one query against each candidate from their token states (rows of encoder_dim
  /// floats; at most max_tokens leading rows are used). Higher = more likely the same meaning.
  /// `timing`, when given, receives the split of this call's time.
  virtual std::vector<float> score(const TokenStates& query, const std::vector<const TokenStates*>& candidates,
                                   ScoreTiming* timing) const = 0;
  std::vector<float> score(const TokenStates& query, const std::vector<const TokenStates*>& candidates) const {
    return score(query, candidates, nullptr);
  }
  /// Writes config and weights to one safetensors file (config in its metadata), atomically.
  virtual void save(const std::string& path) const = 0;
  /// Like save(), with the gate threshold set to `threshold` (sieve verify calibrate); throws
  /// sieve::Error, writing nothing, when `threshold` is NaN or infinite.
  virtual void save_with_threshold(const std::string& path, double threshold) const = 0;
  /// Like save(), recorded for another encoder identity: the same encoder stored differently
  /// (`sieve model export --verifier`, float16 weights). Weights and threshold are unchanged.
  virtual void save_for_encoder(const std::string& path, const std::string& encoder_identity) const = 0;

  /// A verifier from a config; learned kinds get the PyTorch default initialisation from `seed`.
  static std::unique_ptr<Verifier> create(const VerifierConfig& config, uint64_t seed = 42);
  /// Loads a verifier file, or makes a parameter-free one by name ("F0", "F1", "F2", any case).
  /// A name F0..F4 always means the built-in, even where a file of that name exists; a file is a
  /// path with '/' (./F1) or ending in .safetensors (or any other name of an existing file).
  /// `encoder_identity` non-empty: a file recorded for another encoder, or in another identity
  /// scheme, is refused (a string comparison). To check a file against an encoder folder whatever
  /// scheme it records, use load_verifier_for_model or resolve_verifier.
  static std::unique_ptr<Verifier> load(const std::string& file_or_name, const std::string& encoder_identity = "");
};

/// The names of the Mlp gate's features, in order (gate_features()'s columns): "pooled" (cosine
/// of the two sides' mean rows), "f0", "f1", "f2" (lambda 0, tau 0.1), "f2_pos" (lambda 0.1),
/// "row_min" and "row_low" (the lowest and the mean of the lowest quarter of the query rows'
/// maxima), "id_share" (query tokens whose id the candidate holds), "bigram_share", "cue_gap",
/// "crossed", "voice", "order_gap" (OrderPenaltyOptions), "discordant" (the share of the pairs of
/// once-each ids in another order), "len_ratio" (|log(m / n)|), "displacement" (mean |relative
/// position of a query row - of its best column|), "conj_swap" (the share of those reordered pairs
/// that sit on the two sides of a conjunction found once on each side, on opposite sides in the
/// two: "the cat and the dog" / "the dog and the cat"); then (issue 57) "question" (the share of
/// the two sides that hold a question mark), "wh_gap" (1 when the sides' wh-words differ), "num_gap"
/// (the query's numbers and month names the candidate lacks, counted) and "opposite" (pairs of
/// opposite words, one on each side where the other side lacks it: "reduced" / "increased",
/// "above" / "below"; opposite_words()).
const std::vector<std::string>& gate_feature_names();

/// The opposite word pairs the "opposite" feature reads, each pair once (directional, spatial,
/// quantity and evaluative opposites with their inflections: "increase" / "decrease", "above" /
/// "below", "more" / "less"; a fixed list, not WordNet's).
const std::vector<std::pair<std::string, std::string>>& opposite_words();

/// `gate` with its word lists set to ids of `tokenizer`'s vocabulary (negation cues, voice,
/// conjunctions, question marks, wh-words, numbers and months, opposites); its features and weights
/// are kept. What `sieve verify features` computes with (no weights) and `sieve verify create --kind
/// mlp` stores beside a fitted gate's weights.
MlpGateOptions mlp_gate_lexicon(const Tokenizer& tokenizer, MlpGateOptions gate = {});

/// The Mlp gate's features of one query against each candidate: one row of
/// gate_feature_names().size() values per candidate (the query as rows of the map, at most
/// max_tokens a side); `symmetric`: the mean of both directions' features (what a symmetric
/// Mlp verifier reads). Both sides need token ids.
std::vector<std::vector<float>> gate_features(const TokenStates& query, const std::vector<const TokenStates*>& candidates,
                                              const MlpGateOptions& options, size_t max_tokens, bool symmetric);
/// gate_features of text pairs, encoded with `encoder` (batch_size texts per pass): one row per pair.
std::vector<std::vector<float>> gate_text_pair_features(const Encoder& encoder,
                                                        const std::vector<std::pair<std::string, std::string>>& pairs,
                                                        const MlpGateOptions& options, size_t max_tokens,
                                                        bool symmetric, size_t batch_size = 32);

/// A verifier as a face names it (--verifier, the server's option, Python's Verifier.load),
/// resolved by one rule (resolve_verifier).
/// The fast tier's scores that a cascade sends to the cross-encoder: [low, high] (closed). An
/// empty band (low > high) sends nothing.
struct CascadeBand {
  double low = 1, high = 0;
  bool contains(double fast_score) const { return fast_score >= low && fast_score <= high; }
};

struct ResolvedVerifier {
  std::unique_ptr<Verifier> verifier;  ///< a token-map verifier, or nullptr
  /// A cross-encoder ("cross:DIR"), which reads the query's and candidate's texts instead of token
  /// states; nullptr otherwise. Both null: the pooled stage-1 cosine ("cosine"). Both set: the
  /// cascade ("cascade:DIR"): `verifier` is the fast tier, `cross` the accurate one.
  std::unique_ptr<CrossEncoder> cross;
  std::string name;                    ///< "cosine", "F0".."F2", the file's path, "cross:DIR" or "cascade:DIR"
  bool file = false;                   ///< loaded from the file (or cross-encoder folder) `name`
  /// The cascade's band (from the cross-encoder's sieve file); `calibrated` false: none recorded
  /// yet for this fast verifier (sieve verify calibrate --verifier cascade:DIR sets it).
  CascadeBand band;
  bool calibrated = false;
  /// The combination a calibrated cascade scores its band with (valid() false: the
  /// cross-encoder's score alone).
  TierCombination combination;
  bool cosine() const { return verifier == nullptr && cross == nullptr; }
  bool cascade() const { return verifier != nullptr && cross != nullptr; }
  /// "cosine", the verifier's kind "F0".."F4", "cross" or "cascade".
  std::string kind() const;
  /// The calibrated gate threshold, NaN for the cosine and uncalibrated verifiers (a cascade's is
  /// its fast tier's: cascade_score maps the cross-encoder's decisions onto that scale).
  double threshold() const;
};

/// The prefix of a cross-encoder verifier spec: "cross:DIR".
constexpr const char* kCrossVerifierPrefix = "cross:";
/// The prefix of a cascade spec: "cascade:DIR", the model's shipped gate (default_verifier) as the
/// fast tier and the cross-encoder in DIR for the candidates inside the band DIR's sieve file
/// records for that gate.
constexpr const char* kCascadeVerifierPrefix = "cascade:";

/// Gate modes, one rule for every face (--gate-mode, the server's option, Python's gate_spec).
enum class GateMode {
  Auto,      ///< the cascade when the model has a cross-encoder installed with a band for its gate, else fast
  Fast,      ///< the model's shipped gate alone (token states: no second encoder pass)
  Accurate,  ///< the cross-encoder alone, over every candidate
  Cascade,   ///< the fast gate, and the cross-encoder for the candidates inside the calibrated band
};
/// "auto", "fast", "accurate", "cascade" (sieve::Error naming them for anything else).
GateMode gate_mode_from_name(const std::string& name);
const char* gate_mode_name(GateMode mode);
/// The cross-encoder installed for a model: MODEL_DIR/cross-encoder when it is a cross-encoder
/// folder, else "".
std::string installed_cross_encoder(const std::string& model_dir);
/// What install_cross_encoder did.
struct CrossEncoderInstall {
  std::string dir;              ///< MODEL_DIR/cross-encoder
  double threshold = 0;         ///< its calibrated gate threshold
  bool band = false;            ///< a cascade band recorded for the model's gate: `auto` uses the cascade
  bool combined = false;        ///< that band decided by the tiers' combination
  bool replaced = false;        ///< a cross-encoder was installed there before
};
/// Installs the cross-encoder folder `source` (sieve train cross-encoder, then verify calibrate)
/// for the model `model` (an installed name or a folder) as MODEL_DIR/cross-encoder, where
/// --gate-mode accurate|cascade and `auto` find it: its weights, tokenizer, config and sieve file
/// (not its training checkpoints), published whole (publish_dir: the old one or the new one is
/// there at every moment). sieve::Error, with nothing changed, when `source` is not a
/// cross-encoder folder or has no threshold calibrated for its current weights.
CrossEncoderInstall install_cross_encoder(const std::string& source, const std::string& model);

/// The verifier spec of a gate mode: Fast = the model's shipped gate file; Accurate = "cross:DIR";
/// Cascade = "cascade:DIR"; Auto = "cascade:DIR" when the installed cross-encoder has a band for
/// the model's gate (cascade_band_for_gate), else "default" (the fast gate: "default" always
/// names the model's shipped gate, never a tier). DIR = `cross_dir`, else
/// installed_cross_encoder(model_dir); sieve::Error when the mode needs one and there is none, or
/// when the model ships no gate.
std::string gate_verifier_spec(GateMode mode, const std::string& cross_dir, const std::string& model_dir);
/// Whether a cross-encoder's sieve file (`meta`) records a calibrated band for the gate file
/// `gate` as it is now (its SHA-256): the cascade may then run. One rule for resolve_verifier,
/// install_cross_encoder and the Auto gate mode.
bool cascade_band_for_gate(const CrossEncoderMeta& meta, const std::string& gate);

/// Stage 2's verifiers as a face's user chose them: one rule for the CLI's search, the server and
/// Python. `verifier` (--verifier; "" = none), `gate_mode` ("" = none), `cross` (a cross-encoder
/// folder, only with gate mode accurate or cascade). sieve::Error for a verifier and a gate mode
/// both, an unknown mode, or `cross` with another mode.
void check_stage2_choice(const std::string& verifier, const std::string& gate_mode, const std::string& cross);
struct Stage2Choice {
  std::string gate;    ///< what gates: the named verifier, else the gate mode's (auto when none)
  std::string rerank;  ///< what reranks alone: the named verifier, else F1 (stage2_verifier_spec)
};
Stage2Choice stage2_choice(const std::string& verifier, const std::string& gate_mode, const std::string& cross,
                           const std::string& model_dir);

/// A candidate's cascade score: its fast score outside the band; inside, the cross-encoder's score
/// mapped piecewise linearly onto the band so that the cross-encoder's threshold lands on the fast
/// threshold: [0, cross_threshold) -> [low, fast_threshold) and [cross_threshold, 1] ->
/// [fast_threshold, high]. So one threshold (the fast one) gates both, and the ranking keeps the
/// fast tier's order between the band and the rest.
float cascade_score(float fast, float cross, double fast_threshold, double cross_threshold, const CascadeBand& band);
/// A cascade's score as its band decides it: with a valid `combination`, cascade_score of the
/// combination's p (TierCombination::score) against the combination's threshold, so the
/// combination decides the band's pairs; without one, of the cross-encoder's score against
/// `cross_threshold`.
float cascade_score(float fast, float cross, double fast_threshold, double cross_threshold,
                    const TierCombination& combination, const CascadeBand& band);

/// What calibrate_cascade chose, and what it measured on its pairs.
struct CascadeCalibration {
  CascadeBand band;
  double sent = 0;              ///< share of the pairs inside the band
  double auc_fast = 0, auc_cross = 0, auc_cascade = 0;
};
/// The band, symmetric about the fast threshold, that gives the highest ROC-AUC of the cascade's
/// scores on labelled pairs, among bands sending at most `max_sent` of them (in steps of 1 % of
/// the pairs; ties go to the band that sends fewer). `fast` and `cross` score the same pairs.
/// `combination` (valid()): the band's pairs are scored by it (the second cascade_score) instead
/// of the cross-encoder alone; `cross_threshold` is then unused.
CascadeCalibration calibrate_cascade(const std::vector<float>& fast, const std::vector<float>& cross,
                                     const std::vector<bool>& positive, double fast_threshold,
                                     double cross_threshold, double max_sent = 0.25,
                                     const TierCombination& combination = {});

/// Where resolve_verifier looks: the encoder's model folder and its identity.
struct VerifierContext {
  std::string model_dir;          ///< the folder (or installed name) of the encoder; "" = the default model
  std::string encoder_identity;   ///< model_identity() of that encoder; "" = computed from model_dir
};

/// The one rule by which the CLI, the server and Python turn a verifier spec into a verifier:
/// "" or "default" = the verifier shipped for the model (default_verifier), as a cascade when
/// installed_cross_encoder(model) records a band for it (gate mode auto), else F1; "cosine" =
/// the pooled cosine (a null verifier); "F0", "F1", "F2" (any case) = the built-ins, even where a
/// file of that name is in the working folder; else a verifier file (a path with '/', such as
/// ./F1, or ending in .safetensors), refused with sieve::Error when it was recorded for another
/// encoder than the context's (checked whether or not an index is involved); "cross:DIR" = the
/// cross-encoder in folder DIR (any encoder: it reads texts); "cascade:DIR" = the model's shipped
/// gate with that cross-encoder (`calibrated` false until a band for that gate is recorded).
ResolvedVerifier resolve_verifier(const std::string& spec, const VerifierContext& context);

/// Stage 2 at the shards (ShardRemote::scores): the token-map verifier a spec's stage 2 reads, the
/// one a shard must hold: "" or "default" or "cascade:DIR" = the model's shipped gate (its fast
/// tier; F1 when the model ships none), "cosine" and "cross:DIR" = "" (nothing to hold: the
/// cosine and the cross-encoder are computed where the texts and keys are read), else the spec.
std::string shard_verifier_spec(const std::string& spec, const VerifierContext& context);
/// The key by which a router and its shards agree on a token-map verifier: its kind's name for
/// the built-ins ("F1"), "sha256:" + the file's SHA-256 for a file (a cascade's: its fast tier's);
/// "" for the cosine and the cross-encoder.
std::string shard_verifier_key(const ResolvedVerifier& verifier, const VerifierContext& context);

/// Stage 2's two jobs, one rule for every face (the CLI's search, the server, Python): the verifier
/// spec a request uses. `named`: the spec the user gave (--verifier, the server's option; "" =
/// none). A named verifier serves both jobs. Without one, gating (`gate`) takes the model's shipped
/// gate ("default") and reranking alone takes "F1": the gate judges "same statement?", which is not
/// relevance (on SciFact reranking by it lowers nDCG@10 from 0.694 to 0.478; F1: 0.678).
std::string stage2_verifier_spec(const std::string& named, bool gate);

/// Throws sieve::Error unless `verifier` (loaded from `name`; "" = unnamed) was made for the context's encoder:
/// the identity it records equals the encoder's, computed in the recorded scheme
/// (model_identity_like), so files written before SHA-256 identities are still checked. A verifier
/// that records no identity (F0-F2) passes.
void check_verifier_encoder(const Verifier& verifier, const std::string& name, const VerifierContext& context);

/// The negation cues of a vocabulary as id runs: the words "not", "no", "never", "nothing",
/// "none", "nobody", "neither", "nor", "without", "nowhere", "cannot" as the tokenizer reads them
/// in mid-sentence and at the start of a text, lower-case and capitalised, and the pieces of the
/// contracted "n't" ("isn't", "don't", ... with ' or ’) from the apostrophe on (WordPiece "' t",
/// byte-level BPE "'t", SentencePiece "' t" or "n't"). Any tokenizer; runs holding the unknown
/// token are left out; sorted, no repeats. What F4Options::cue_ids and CuePenaltyOptions take.
CueSequences negation_cues(const Tokenizer& tokenizer);
/// The vocabulary ids of the voice cue words of OrderPenaltyOptions ("by", when one piece), sorted.
std::vector<int32_t> voice_cue_ids(const Tokenizer& tokenizer);
/// The vocabulary ids of the coordinating conjunctions "and", "or" (each when one piece), sorted
/// (MlpGateOptions::conj_ids).
std::vector<int32_t> conjunction_ids(const Tokenizer& tokenizer);

/// Verifier::load of a file or built-in name, checked (check_verifier_encoder) against the encoder
/// in `model_dir` (a folder or installed name).
std::unique_ptr<Verifier> load_verifier_for_model(const std::string& file_or_name, const std::string& model_dir);

/// Scores pairs whose token states come in order: states[2i] the query, states[2i + 1] its
/// candidate (what encoding [q0, c0, q1, c1, ...] gives). One score per pair.
std::vector<float> score_pairs(const Verifier& verifier, const std::vector<TokenStates>& states);

/// The same from encoded texts [q0, c0, q1, c1, ...]; `verifier` null = the cosine of the pooled
/// keys (then `encoded` needs no token states).
std::vector<float> score_pairs(const Verifier* verifier, const Embeddings& encoded);
/// Scores the first encoded text against each of the others (one score per other text), with
/// `verifier`, or, when it is null, by the cosine of the pooled keys.
std::vector<float> score_candidates(const Verifier* verifier, const Embeddings& encoded);

/// Encodes every (query, candidate) pair with `encoder` (batch_size texts per pass) and scores it
/// with `verifier`, or, when it is null, with the cosine of the two pooled unit keys (stage 1's
/// score). What `sieve verify score` and the Python package's Verifier.score compute.
std::vector<float> score_text_pairs(const Encoder& encoder, const Verifier* verifier,
                                    const std::vector<std::pair<std::string, std::string>>& pairs,
                                    size_t batch_size = 32);

/// Throws sieve::Error unless `verifier`, when it is a cascade, has a band recorded for its fast
/// tier (calibrated): the one check every face runs before a cascade scores anything.
void require_calibrated_cascade(const ResolvedVerifier& verifier);

/// A cascade's second step: the pairs whose fast score (`scores`, one per pair) lies in the band
/// are scored by the cross-encoder and their scores replaced by cascade_score. Returns how many
/// were sent; nullopt when `deadline` passed before the cross-encoder had scored them all
/// (CrossEncoder::logits_until; `scores` then unchanged). sieve::Error when `verifier` is no
/// cascade or its cross-encoder has no threshold.
std::optional<size_t> apply_cascade(const ResolvedVerifier& verifier,
                                    const std::vector<std::pair<std::string, std::string>>& pairs,
                                    std::vector<float>& scores, size_t batch_size = 32,
                                    std::chrono::steady_clock::time_point deadline =
                                        std::chrono::steady_clock::time_point::max());
/// Whether the verifier's scores are probabilities in [0, 1] (the mlp gate, a cross-encoder, a
/// cascade), not similarities in [-1, 1] (cosine, F0-F4): what a face that answers on [0, 1]
/// (TEI's /rerank) maps or not.
bool scores_are_probabilities(const ResolvedVerifier& verifier);

/// A resolved verifier's scores of text pairs, its branch written once (the server's /v1/verify,
/// TEI's /rerank, explain, score_text_pairs): a cross-encoder reads the pairs' texts itself (its
/// logits when `logits`, else its scores), 8 pairs at a time until `deadline`; otherwise `fast()`
/// gives the token-map verifier's (or the cosine's) score of each pair, and a cascade sends the pairs
/// inside its band to its cross-encoder (apply_cascade). nullopt when `deadline` passes while the
/// cross-encoder scores. sieve::Error for a cascade without a band.
std::optional<std::vector<float>> score_pairs_by_kind(const ResolvedVerifier& verifier,
                                                      const std::vector<std::pair<std::string, std::string>>& pairs,
                                                      const std::function<std::vector<float>()>& fast,
                                                      std::chrono::steady_clock::time_point deadline =
                                                          std::chrono::steady_clock::time_point::max(),
                                                      bool logits = false, size_t batch_size = 32);

/// score_text_pairs with a resolved verifier: a cross-encoder scores the texts itself (`encoder`
/// may then be null); otherwise as above (`encoder` required); a cascade scores every pair with its
/// fast tier and the pairs inside its band with the cross-encoder too (cascade_score).
std::vector<float> score_text_pairs(const Encoder* encoder, const ResolvedVerifier& verifier,
                                    const std::vector<std::pair<std::string, std::string>>& pairs,
                                    size_t batch_size = 32);

/// A cosine map for display: M_ij = cos(q_i, c_j), m x n row-major, at most max_tokens per side.
struct CosineMap {
  size_t m = 0, n = 0;
  std::vector<float> values;
};
CosineMap cosine_map(const TokenStates& query, const TokenStates& candidate, size_t max_tokens = 128);

/// An SVG heatmap of a map (blue = -1, white = 0, red = 1) with the tokens on both axes (query
/// down the left, candidate along the top) and `title` above it.
std::string render_map_svg(const CosineMap& map, const std::vector<std::string>& query_tokens,
                           const std::vector<std::string>& candidate_tokens, const std::string& title);

/// Why a candidate was accepted or rejected (`sieve explain`, the server's /v1/explain).
struct Explanation {
  std::vector<std::string> query_tokens, candidate_tokens;  ///< as many as the map's rows / columns
  CosineMap map;
  double stage1_cosine = 0;   ///< pooled keys' cosine
  std::string verifier;       ///< "F0".."F4", or "cosine"
  float score = 0;
  double threshold = std::numeric_limits<double>::quiet_NaN();
  std::string decision;       ///< "accept", "reject" or "no threshold"
  std::string title;          ///< one line for the heatmap
};

/// Encodes both texts and explains the verdict of `verifier` (nullptr: the pooled cosine is the
/// score); `threshold` NaN = the verifier file's. Throws sieve::Error when the score is NaN or infinite.
Explanation explain_pair(const Encoder& encoder, const Verifier* verifier, const std::string& query,
                         const std::string& candidate, double threshold);
/// {"query_tokens", "candidate_tokens", "map" (4 decimals), "stage1_cosine", "verifier", "score",
/// "decision"[, "threshold"][, "svg": svg_path]} as one JSON line (no newline).
std::string explanation_json(const Explanation& e, const std::string& svg_path = "");
/// The heatmap of an explanation (render_map_svg with its tokens and title).
std::string explanation_svg(const Explanation& e);

}  // namespace sieve
