// The native pass's per-thread scratch (model/thread_scratch.h): a slot's buffer is kept and
// reused between leases, what a thread keeps never passes kKeptScratchBytes (a request that would
// is its lease's own and freed with it), and a slot leased twice at once gives two buffers.
#include <gtest/gtest.h>

#include <cstring>
#include <thread>

#include "model/thread_scratch.h"

namespace sieve {
namespace {

TEST(ThreadScratch, KeptReusedAndCapped) {
  std::thread t([] {  // a fresh thread: nothing kept yet
    EXPECT_EQ(thread_scratch_kept_bytes(), 0u);
    uint8_t* first = nullptr;
    {
      ScratchLease a(Scratch::States, 1000);
      EXPECT_TRUE(a.kept());
      EXPECT_EQ(reinterpret_cast<uintptr_t>(a.bytes()) % 64, 0u);
      std::memset(a.bytes(), 1, 1000);
      first = a.bytes();
    }
    const size_t after_one = thread_scratch_kept_bytes();
    EXPECT_GE(after_one, 1000u);
    {
      ScratchLease again(Scratch::States, 800);  // smaller: the same buffer
      EXPECT_EQ(again.bytes(), first);
      ScratchLease twice(Scratch::States, 800);  // the slot is leased: one of its own
      EXPECT_FALSE(twice.kept());
      EXPECT_NE(twice.bytes(), again.bytes());
    }
    EXPECT_EQ(thread_scratch_kept_bytes(), after_one);
    // Slots together up to the cap; past it, the lease's own buffer, and nothing more kept.
    const size_t big = kKeptScratchBytes / 2;
    {
      ScratchLease w(Scratch::Work, big);
      EXPECT_TRUE(w.kept());
      w.bytes()[big - 1] = 7;
    }
    const size_t kept = thread_scratch_kept_bytes();
    EXPECT_LE(kept, kKeptScratchBytes);
    {
      ScratchLease over(Scratch::Accumulator, big);  // would take the thread past the cap
      EXPECT_FALSE(over.kept());
      over.bytes()[big - 1] = 7;
      EXPECT_EQ(thread_scratch_kept_bytes(), kept);
    }
    EXPECT_EQ(thread_scratch_kept_bytes(), kept);
    {
      ScratchLease huge(Scratch::Row, kKeptScratchBytes + 1);
      EXPECT_FALSE(huge.kept());
    }
    EXPECT_LE(thread_scratch_kept_bytes(), kKeptScratchBytes);
  });
  t.join();
}

}  // namespace
}  // namespace sieve
