// sieve: the Encoder interface: text -> final-layer token states and a pooled unit key.
#pragma once

#include <cstddef>
#include <functional>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sieve/model.h"
#include "sieve/tokenizer.h"

namespace sieve {

/// Load-time options of an encoder (fixed for its lifetime, except `threads`: see there).
struct EncoderOptions {
  std::string device = "cpu";        ///< "cpu", "cuda" or "cuda:N"
  /// > 0: set_compute_threads(threads) at load, which is process-wide (every encoder and verifier
  /// of the process, and later loads may change it again); 0 = keep the process's setting (all
  /// cores unless set_compute_threads() was called). See docs/architecture.md.
  int threads = 0;
  std::optional<Pooling> pooling;    ///< override the model's pooling (1_Pooling/config.json)
  size_t max_length = 0;             ///< token cap incl. specials; 0 = the model's max_seq_length
  /// Int8: the dense layers of a BERT-family model on the CPU run with int8 weights and
  /// activations quantized per row at run time (keys within about 0.01 in cosine of fp32; see
  /// docs/benchmarks.md). Other families and CUDA keep fp32.
  Precision precision = Precision::Fp32;
  /// Int8: the weight grid, 127 or 63 levels (0 = this CPU's: 127 with VNNI, else 63). Keys of
  /// the two grids differ, so an index records the grid it was built on and asks for it here.
  int int8_levels = 0;
  /// The CPU forward pass (Engine): Torch, Native for a BERT model (sieve::Error at load for
  /// another family or a CUDA device), or Auto (native where it runs, else torch). Both give the
  /// same states within float rounding.
  Engine engine = Engine::Auto;
  /// false: load no tokenizer (the folder needs none): only encode_ids() works, encode() and
  /// tokenizer() throw sieve::Error; padding uses config.json's pad_token_id.
  bool load_tokenizer = true;
};

/// Per-call options of Encoder::encode.
struct EncodeCall {
  size_t batch_size = 32;      ///< texts per forward pass (after sorting by length)
  bool token_states = false;   ///< also return the final-layer token states of every text
  /// true: warn (once per process) when texts were truncated; false: the caller reports
  /// Embeddings::truncated itself (the index builder warns once with its total).
  bool warn_truncation = true;
  /// Called after every forward pass with the texts done so far and the total; returning false
  /// stops the call with sieve::Error ("interrupted"). The Python package reports progress and
  /// honours Ctrl-C through it.
  std::function<bool(size_t done, size_t total)> progress;
};

/// The final-layer states of one text: `length` rows of `dim` floats, row-major, padding removed,
/// and the token id of each row when known (empty otherwise: a verifier with the exact-match
/// channel needs them; the encoder and Index::tokens with an encoder fill them).
struct TokenStates {
  size_t length = 0;
  std::vector<float> values;
  std::vector<int32_t> ids;  ///< `length` ids, or empty
};

/// Output of Encoder::encode, in input order.
struct Embeddings {
  size_t dim = 0;
  std::vector<float> pooled;            ///< n x dim, each row L2-normalised (the unit key)
  std::vector<TokenStates> tokens;      ///< n entries when EncodeCall::token_states, else empty
  std::vector<Encoding> encodings;      ///< the tokenizer's output for each text
  size_t truncated = 0;                 ///< how many texts were cut to max_length
};

/// A loaded text encoder. Immutable after load; encode() may be called from several threads.
class Encoder {
 public:
  virtual ~Encoder() = default;
  /// Width of token states and keys.
  virtual size_t dim() const = 0;
  /// The tokenizer this encoder was loaded with; sieve::Error when loaded without one
  /// (EncoderOptions::load_tokenizer false).
  virtual const Tokenizer& tokenizer() const = 0;
  /// What was read from the model directory.
  virtual const ModelInfo& info() const = 0;
  /// Pooling mode in effect.
  virtual Pooling pooling() const = 0;
  /// Token cap including specials.
  virtual size_t max_length() const = 0;
  /// The arithmetic its keys come from: "fp32", or "int8-127" / "int8-63" (int8 dense layers on
  /// that weight grid). Keys of two grids differ by more than rounding; an index records it.
  virtual std::string key_grid() const = 0;
  /// Encodes texts (any count, any lengths; empty texts give [CLS][SEP]).
  virtual Embeddings encode(const std::vector<std::string>& texts, const EncodeCall& call = {}) const = 0;
  /// Encodes pre-tokenized inputs: each a list of vocabulary ids used exactly as given (special
  /// tokens included, token type 0, no truncation). sieve::Error names the input when one is
  /// empty, longer than max_length(), or holds an id outside the vocabulary.
  virtual Embeddings encode_ids(const std::vector<std::vector<int32_t>>& ids, const EncodeCall& call = {}) const = 0;

  /// Loads a BERT model directory in Hugging Face layout; throws sieve::Error on any problem,
  /// naming the file or tensor at fault.
  static std::unique_ptr<Encoder> load(const std::string& model_dir, const EncoderOptions& opt = {});
};

/// The pooled vector of one text's token states before normalisation (mean of the rows, the
/// first row for Cls, the last for LastToken) into `out` (dim floats).
void pool_states(const TokenStates& t, size_t dim, Pooling pooling, float* out);

/// Sets the number of compute threads sieve's tensor code uses (libtorch intra-op and BLAS);
/// 0 = number of cores. Process-wide.
void set_compute_threads(int n);
/// The count set by set_compute_threads() (the number of cores before any call).
int compute_threads();

/// Call first thing in main(): when OpenBLAS does not know this CPU and fell back to its generic
/// kernels, re-executes the program with OPENBLAS_CORETYPE set to the best matching kernels
/// and OPENBLAS_THREAD_TIMEOUT=16 (idle workers sleep sooner) unless already set
/// (SIEVE_BLAS_REEXEC=0 disables this; with argv == nullptr it only warns). No-op otherwise.
void ensure_fast_blas(char** argv);

/// Call early in main() of a long-running process that searches: keeps large freed blocks in
/// the C allocator for reuse (glibc: mmap threshold 32 MiB, its maximum; trim threshold 1 GiB) instead of
/// handing them back to the kernel and faulting fresh pages in on the next query. Stage 2
/// allocates tens of MB per query; this halved its time (docs/benchmarks.md). Process-wide;
/// no-op on other C libraries.
void tune_allocator();

}  // namespace sieve
