// Per-thread scratch of the native pass: the one allocator of its working buffers. A thread's
// calls run one after another, so each purpose (a slot) keeps its buffer between calls (fresh
// buffers per call cost page faults that show at batch 1, and at 32 x 256 tokens about 4 % of a
// bf16 batch). What a thread keeps, all slots together, is at most kKeptScratchBytes: a request
// that would take it past that gets a buffer of its own, freed when its lease ends. So a server's
// encoder threads keep at most kKeptScratchBytes each, whatever the batches they saw.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace sieve {

/// The purposes that lease scratch (one buffer each per thread).
enum class Scratch : int {
  States,       ///< NativeBert: the call's token states
  Work,         ///< NativeBert: a group's working rows
  Attention,    ///< NativeAttention: heads' blocks, scores, weights, context
  Scratchpad,   ///< PackedLinear: oneDNN's scratchpad
  Quantized,    ///< PackedLinear: the input rows as uint8 or bfloat16
  Accumulator,  ///< PackedLinear: int32 products of a chunk of rows
  RowParams,    ///< PackedLinear: each row's scale and zero point
  Row,          ///< PackedLinear: one output row in float
  kCount
};

/// What one thread keeps between calls, all slots together (bytes).
constexpr size_t kKeptScratchBytes = size_t{128} << 20;

/// A buffer of at least `bytes` (64-byte aligned) for the calling thread while the lease lives:
/// the thread's kept buffer of `slot` when it fits the cap (grown if needed), else one of its own.
class ScratchLease {
 public:
  ScratchLease(Scratch slot, size_t bytes);
  ~ScratchLease();
  ScratchLease(const ScratchLease&) = delete;
  ScratchLease& operator=(const ScratchLease&) = delete;
  uint8_t* bytes() const { return data_; }
  template <class T>
  T* as() const {
    return reinterpret_cast<T*>(data_);
  }
  /// Whether this lease uses the thread's kept buffer (not one of its own).
  bool kept() const { return own_ == nullptr; }

 private:
  Scratch slot_;
  std::unique_ptr<uint8_t[]> own_;
  uint8_t* data_ = nullptr;
};

/// Bytes the calling thread keeps now, all slots together (never above kKeptScratchBytes).
size_t thread_scratch_kept_bytes();

}  // namespace sieve
