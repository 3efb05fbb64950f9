// Per-thread scratch of the native pass (model/thread_scratch.h).
#include "model/thread_scratch.h"

#include <array>

namespace sieve {
namespace {

constexpr size_t kAlign = 64;
constexpr size_t kSlots = static_cast<size_t>(Scratch::kCount);

struct Kept {
  std::array<std::unique_ptr<uint8_t[]>, kSlots> data;
  std::array<size_t, kSlots> size{};
  std::array<bool, kSlots> leased{};
  size_t total = 0;
};

Kept& this_thread() {
  thread_local Kept k;
  return k;
}

uint8_t* aligned(uint8_t* p) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  return reinterpret_cast<uint8_t*>((a + kAlign - 1) / kAlign * kAlign);
}

}  // namespace

ScratchLease::ScratchLease(Scratch slot, size_t bytes) : slot_(slot) {
  const size_t s = static_cast<size_t>(slot);
  const size_t need = bytes + kAlign;
  Kept& k = this_thread();
  if (!k.leased[s]) {
    if (k.size[s] >= need) {
      k.leased[s] = true;
      data_ = aligned(k.data[s].get());
      return;
    }
    if (k.total - k.size[s] + need <= kKeptScratchBytes) {  // grown within the cap
      k.data[s].reset();  // freed before the new one: the two never add up
      k.total -= k.size[s];
      k.size[s] = 0;
      k.data[s].reset(new uint8_t[need]);
      k.size[s] = need;
      k.total += need;
      k.leased[s] = true;
      data_ = aligned(k.data[s].get());
      return;
    }
  }
  own_.reset(new uint8_t[need]);  // over the cap, or the slot already leased on this thread
  data_ = aligned(own_.get());
}

ScratchLease::~ScratchLease() {
  if (!own_) this_thread().leased[static_cast<size_t>(slot_)] = false;
}

size_t thread_scratch_kept_bytes() { return this_thread().total; }

}  // namespace sieve
