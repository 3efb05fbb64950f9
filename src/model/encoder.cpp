// BertEncoder: the libtorch implementation of the Encoder interface (any EncoderBackbone family).
#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "core/log.h"
#include "model/bert.h"
#include "model/native_bert.h"
#include "model/threads.h"
#include "sieve/encoder.h"
#include "sieve/error.h"
#include "sieve/safetensors.h"

namespace sieve {
namespace {

// The arithmetic keys were made in, as an index records it: "fp32", "bf16", "int8-127", "int8-63",
// int8 followed by its attention's arithmetic ("int8-127+bf16-attention", "int8-63+fp32-attention").
constexpr const char* kBf16Attention = "+bf16-attention";
constexpr const char* kFp32Attention = "+fp32-attention";

std::string key_grid_name(Precision precision, int int8_levels) {
  if (precision == Precision::Int8) return "int8-" + std::to_string(int8_levels);
  return precision_name(precision);
}

class BertEncoder final : public Encoder {
 public:
  BertEncoder(const std::string& dir, const EncoderOptions& opt) : device_(parse_device(opt.device)) {
    info_ = read_model_info(dir);
    if (opt.load_tokenizer) {
      tokenizer_ = Tokenizer::from_model_dir(dir);
      SIEVE_THROW_IF_NOT(tokenizer_->vocab_size() <= static_cast<size_t>(info_.config.vocab_size),
                         dir << ": the tokenizer has " << tokenizer_->vocab_size()
                             << " entries but config.json says vocab_size " << info_.config.vocab_size);
      pad_id_ = tokenizer_->special_tokens().pad >= 0 ? tokenizer_->special_tokens().pad : 0;
    } else {
      const int64_t pad = info_.config.pad_token_id;
      pad_id_ = pad >= 0 && pad < info_.config.vocab_size ? pad : 0;  // masked out either way
    }
    pooling_ = opt.pooling.value_or(info_.pooling);
    max_length_ = opt.max_length ? opt.max_length : info_.max_seq_length;
    max_length_ = std::min<size_t>(max_length_, static_cast<size_t>(max_sequence_length(info_.config)));
    SIEVE_THROW_IF_NOT(max_length_ >= 2, "max_length must be at least 2 (room for [CLS] and [SEP])");
    // Threads are process-wide: set only when asked, else a caller's set_compute_threads(1) (or
    // Python's set_threads(1)) would be undone by every load.
    if (opt.threads > 0)
      set_compute_threads(opt.threads);
    else
      ensure_compute_threads();
    ensure_fast_blas(nullptr);  // warns when the process runs OpenBLAS's generic kernels

    auto weights = SafetensorsFile::open(info_.weights_path);
    model_ = make_encoder_backbone(info_.config, /*dropout=*/0.0);
    model_->load_weights(*weights);
    weights.reset();  // unmapped now: its pages would count in the peak beside the copies made below
    model_->eval();
    model_->to(device_);
    const bool native_runs = device_.is_cpu() && NativeBert::supports(info_.config);
    if (opt.engine == Engine::Native || (opt.engine == Engine::Auto && native_runs)) {
      SIEVE_THROW_IF_NOT(native_runs,
                         "the native engine runs the BERT family (bert, roberta, xlm-roberta, mpnet) on the CPU; '" << dir << "' is a " << info_.config.model_type
                                                                            << " model" << (device_.is_cpu() ? "" : " on CUDA")
                                                                            << " (use the torch engine)");
      const int levels = opt.precision == Precision::Int8
                             ? (opt.int8_levels ? opt.int8_levels : PackedLinear::default_weight_levels())
                             : 0;
      native_ = std::make_unique<NativeBert>(*model_, opt.precision, levels);
      // int8's recipe names its attention too: bfloat16 operands where the CPU has bf16 products,
      // fp32 elsewhere (keys of the two differ by more than rounding).
      key_grid_ = key_grid_name(opt.precision, levels) +
                  (opt.precision != Precision::Int8 ? "" : native_->bf16_attention() ? kBf16Attention : kFp32Attention);
      model_.reset();  // the native pass holds its own copies (int8: no fp32 copy of the dense layers)
      return;
    }
    // Nothing packed (CUDA, or a family without packed layers): the layers run in fp32.
    const int levels = model_->prepare_inference(opt.precision, opt.int8_levels);
    key_grid_ = levels < 0 ? "fp32" : key_grid_name(opt.precision, levels) + (opt.precision == Precision::Int8 ? kFp32Attention : "");
  }

  size_t dim() const override { return static_cast<size_t>(info_.config.hidden_size); }
  const Tokenizer& tokenizer() const override {
    SIEVE_THROW_IF_NOT(tokenizer_ != nullptr, "this encoder was loaded without a tokenizer: it encodes token ids only");
    return *tokenizer_;
  }
  const ModelInfo& info() const override { return info_; }
  Pooling pooling() const override { return pooling_; }
  size_t max_length() const override { return max_length_; }
  std::string key_grid() const override { return key_grid_; }

  Embeddings encode(const std::vector<std::string>& texts, const EncodeCall& call) const override {
    SIEVE_THROW_IF_NOT(call.batch_size > 0, "batch size must be positive");
    Embeddings out;
    out.encodings.reserve(texts.size());
    EncodeOptions eo;
    eo.max_length = max_length_;
    const Tokenizer& tok = tokenizer();
    for (const auto& t : texts) {
      out.encodings.push_back(tok.encode(t, eo));
      if (out.encodings.back().truncated) ++out.truncated;
    }
    if (out.truncated > 0 && call.warn_truncation)
      log_warn_once("encoder.truncate", std::to_string(out.truncated) + " text(s) longer than " +
                                            std::to_string(max_length_) + " tokens were truncated");
    run(out, call);
    return out;
  }

  Embeddings encode_ids(const std::vector<std::vector<int32_t>>& ids, const EncodeCall& call) const override {
    SIEVE_THROW_IF_NOT(call.batch_size > 0, "batch size must be positive");
    const auto vocab = static_cast<int64_t>(info_.config.vocab_size);
    Embeddings out;
    out.encodings.reserve(ids.size());
    for (size_t i = 0; i < ids.size(); ++i) {
      SIEVE_THROW_IF_NOT(!ids[i].empty(), "input " << i + 1 << ": no token ids");
      SIEVE_THROW_IF_NOT(ids[i].size() <= max_length_, "input " << i + 1 << ": " << ids[i].size()
                                                                << " token ids, more than the model's " << max_length_);
      for (int32_t id : ids[i])
        SIEVE_THROW_IF_NOT(id >= 0 && id < vocab,
                           "input " << i + 1 << ": token id " << id << " is outside the vocabulary (0.." << vocab - 1 << ")");
      Encoding e;
      e.ids = ids[i];
      e.type_ids.assign(ids[i].size(), 0);
      out.encodings.push_back(std::move(e));
    }
    run(out, call);
    return out;
  }

 private:
  // Runs the model over out.encodings (any count and lengths) and fills the keys and, when asked,
  // the token states with their ids.
  void run(Embeddings& out, const EncodeCall& call) const {
    out.dim = dim();
    const size_t n = out.encodings.size();
    out.pooled.assign(n * out.dim, 0.f);
    if (call.token_states) out.tokens.resize(n);

    // Longest first, so each batch pads to a length close to all its members.
    std::vector<size_t> order(n);
    std::iota(order.begin(), order.end(), size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return out.encodings[a].ids.size() > out.encodings[b].ids.size();
    });

    if (native_) return run_native(out, call, order);
    c10::InferenceMode guard;
    for_each_batch(out, call, order, [&](size_t start, size_t b, size_t L, std::vector<int64_t>& ids_v,
                                         std::vector<int64_t>& mask_v, std::vector<int64_t>& types_v) {
      const std::vector<int64_t> shape = {static_cast<int64_t>(b), static_cast<int64_t>(L)};
      at::Tensor ids = at::from_blob(ids_v.data(), shape, at::kLong);
      at::Tensor mask = at::from_blob(mask_v.data(), shape, at::kLong);
      at::Tensor types = at::from_blob(types_v.data(), shape, at::kLong);
      at::Tensor dev_mask = mask.to(device_);
      at::Tensor states = model_->forward(ids.to(device_), dev_mask, types.to(device_));
      at::Tensor keys = pool_and_normalize(states, dev_mask, pooling_).to(at::kCPU).contiguous();
      const float* kp = keys.data_ptr<float>();
      for (size_t r = 0; r < b; ++r)
        std::memcpy(&out.pooled[order[start + r] * out.dim], kp + r * out.dim, out.dim * sizeof(float));
      if (call.token_states) {
        at::Tensor cpu = states.to(at::kCPU).contiguous();
        const float* sp = cpu.data_ptr<float>();
        for (size_t r = 0; r < b; ++r) {
          const size_t len = out.encodings[order[start + r]].ids.size();
          TokenStates& ts = out.tokens[order[start + r]];
          ts.length = len;
          ts.values.assign(sp + r * L * out.dim, sp + (r * L + len) * out.dim);
          ts.ids = out.encodings[order[start + r]].ids;
        }
      }
    });
  }

  // The batches both passes run: `order` cut into call.batch_size pieces, each padded to its
  // longest (first) member with pad ids, mask 0 and type 0; fn(start, b, L, ids, mask, types) runs
  // one; call.progress after each.
  template <class Fn>
  void for_each_batch(const Embeddings& out, const EncodeCall& call, const std::vector<size_t>& order, Fn&& fn) const {
    const size_t n = out.encodings.size();
    for (size_t start = 0; start < n; start += call.batch_size) {
      const size_t b = std::min(call.batch_size, n - start);
      const size_t L = out.encodings[order[start]].ids.size();
      std::vector<int64_t> ids(b * L, pad_id_), mask(b * L, 0), types(b * L, 0);
      for (size_t r = 0; r < b; ++r) {
        const Encoding& e = out.encodings[order[start + r]];
        for (size_t j = 0; j < e.ids.size(); ++j) {
          ids[r * L + j] = e.ids[j];
          mask[r * L + j] = 1;
          types[r * L + j] = e.type_ids[j];
        }
      }
      fn(start, b, L, ids, mask, types);
      if (call.progress && !call.progress(start + b, n)) SIEVE_THROW("interrupted after " << start + b << " of " << n << " texts");
    }
  }

  // run() on the native pass: the same batches (for_each_batch) and pooling, without tensors.
  void run_native(Embeddings& out, const EncodeCall& call, const std::vector<size_t>& order) const {
    const size_t H = out.dim;
    for_each_batch(out, call, order, [&](size_t start, size_t b, size_t L, std::vector<int64_t>& ids,
                                         std::vector<int64_t>& mask, std::vector<int64_t>& types) {
      std::vector<float> states(b * L * H);
      native_->forward(ids.data(), mask.data(), types.data(), static_cast<int64_t>(b), static_cast<int64_t>(L),
                       states.data());
      for (size_t r = 0; r < b; ++r) {
        const size_t len = out.encodings[order[start + r]].ids.size();
        float* key = &out.pooled[order[start + r] * H];
        TokenStates view;
        view.length = len;
        view.values.assign(states.begin() + static_cast<std::ptrdiff_t>(r * L * H),
                           states.begin() + static_cast<std::ptrdiff_t>((r * L + len) * H));
        pool_states(view, H, pooling_, key);
        double norm = 0;
        for (size_t d = 0; d < H; ++d) norm += double(key[d]) * key[d];
        const float inv = 1.0f / std::max(static_cast<float>(std::sqrt(norm)), 1e-12f);
        for (size_t d = 0; d < H; ++d) key[d] *= inv;
        if (call.token_states) {
          TokenStates& ts = out.tokens[order[start + r]];
          ts.length = len;
          ts.values = std::move(view.values);
          ts.ids = out.encodings[order[start + r]].ids;
        }
      }
    });
  }

  c10::Device device_;
  ModelInfo info_;
  std::unique_ptr<Tokenizer> tokenizer_;  // null when loaded without one
  int64_t pad_id_ = 0;
  std::shared_ptr<EncoderBackbone> model_;
  std::unique_ptr<NativeBert> native_;  // Engine::Native: the forward pass (model_ is then null)
  Pooling pooling_ = Pooling::Mean;
  size_t max_length_ = 512;
  std::string key_grid_ = "fp32";
};

}  // namespace

void pool_states(const TokenStates& t, size_t dim, Pooling pooling, float* out) {
  std::fill(out, out + dim, 0.f);
  if (t.length == 0) return;
  if (pooling == Pooling::Mean) {
    for (size_t r = 0; r < t.length; ++r)
      for (size_t d = 0; d < dim; ++d) out[d] += t.values[r * dim + d];
    for (size_t d = 0; d < dim; ++d) out[d] /= static_cast<float>(t.length);
    return;
  }
  const size_t r = pooling == Pooling::Cls ? 0 : t.length - 1;
  std::copy(t.values.begin() + static_cast<std::ptrdiff_t>(r * dim), t.values.begin() + static_cast<std::ptrdiff_t>((r + 1) * dim), out);
}

std::unique_ptr<Encoder> Encoder::load(const std::string& model_dir, const EncoderOptions& opt) {
  return std::make_unique<BertEncoder>(model_dir, opt);
}

}  // namespace sieve
