// The batch sampler of train_data.h: deterministic epochs of batches in which no text is shared
// between two rows, with a state that can be saved and restored.
#include <algorithm>
#include <cstdint>
#include <numeric>
#include <sstream>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "sieve/error.h"
#include "train/train_data.h"

namespace sieve::train {
namespace {

// --- the batch sampler's helpers ------------------------------------------------------------------

// The distinct texts of a row. A row may repeat a text itself (identity triplets have anchor ==
// positive on purpose); only texts shared between rows of a batch are forbidden.
void row_texts(const TrainExample& ex, std::vector<std::string_view>& out) {
  out.clear();
  out.push_back(ex.anchor);
  out.push_back(ex.positive);
  for (const std::string& n : ex.negatives) out.push_back(n);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
}

using TextSet = std::unordered_set<std::string_view>;

// Adds the row to the batch's texts when none of its texts is there yet.
bool take_if_fits(const TrainExample& ex, TextSet& used, std::vector<std::string_view>& scratch) {
  row_texts(ex, scratch);
  for (std::string_view t : scratch)
    if (used.count(t)) return false;
  used.insert(scratch.begin(), scratch.end());
  return true;
}

// Up to `batch_size` rows with pairwise distinct texts, rows that share fewest texts with others
// first (the min-degree greedy heuristic for a maximum independent set; it finds the largest set
// whenever rows that share a text all share that one text, the usual case of repeated anchors).
std::vector<size_t> witness_batch(const std::vector<TrainExample>& data, size_t batch_size) {
  std::unordered_map<std::string_view, size_t> count;
  std::vector<std::string_view> texts;
  for (const TrainExample& ex : data) {
    row_texts(ex, texts);
    for (std::string_view t : texts) ++count[t];
  }
  std::vector<std::pair<size_t, size_t>> by_degree;  // (texts shared with other rows, row)
  for (size_t r = 0; r < data.size(); ++r) {
    row_texts(data[r], texts);
    size_t degree = 0;
    for (std::string_view t : texts) degree += count[t] - 1;
    by_degree.emplace_back(degree, r);
  }
  std::sort(by_degree.begin(), by_degree.end());
  std::vector<size_t> batch;
  TextSet used;
  for (const auto& [degree, r] : by_degree) {
    if (batch.size() == batch_size) break;
    if (take_if_fits(data[r], used, texts)) batch.push_back(r);
  }
  return batch;
}

// An unbiased draw in [0, n) from the raw 64-bit outputs, which the standard fixes for
// mt19937_64 (std::shuffle and the distributions are not fixed, so orders would differ between
// standard libraries).
uint64_t uniform_below(std::mt19937_64& rng, uint64_t n) {
  const uint64_t threshold = (0 - n) % n;  // 2^64 mod n: the low outputs that would bias the modulo
  while (true) {
    const uint64_t r = rng();
    if (r >= threshold) return r % n;
  }
}

// FNV-1a over every text of every row: a state restored onto other data fails loudly.
uint64_t data_fingerprint(const std::vector<TrainExample>& data) {
  uint64_t h = 1469598103934665603ull;
  auto mix = [&](std::string_view s) {
    for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
    h = (h ^ 0xFFu) * 1099511628211ull;  // separator: ("ab","c") and ("a","bc") differ
  };
  for (const TrainExample& ex : data) {
    mix(ex.anchor);
    mix(ex.positive);
    for (const std::string& n : ex.negatives) mix(n);
    h = (h ^ 0xFEu) * 1099511628211ull;
  }
  return h;
}

const char* const kStateMagic = "sieve-batch-sampler";
constexpr int kStateVersion = 1;

}  // namespace

// --- BatchSampler -----------------------------------------------------------------------------------
//
// Invariants: order_ holds each row at most once; rows at its front are the oldest (rows deferred
// by earlier batches, then the current epoch's shuffled rows). epoch_ counts epochs begun after
// the first, which the constructor shuffles (so epoch() is 0 for the first pass).

BatchSampler::BatchSampler(const std::vector<TrainExample>& data, size_t batch_size, uint64_t seed)
    : data_(&data), batch_size_(batch_size), rng_(seed) {
  SIEVE_THROW_IF_NOT(batch_size > 0, "batch sampler: the batch size must be at least 1");
  SIEVE_THROW_IF_NOT(data.size() >= batch_size, "batch sampler: " << data.size() << " training example(s) cannot fill "
                                                                  << "a batch of " << batch_size);
  // Without this check next() could never complete a batch of distinct texts.
  const size_t most = witness_batch(data, batch_size).size();
  SIEVE_THROW_IF_NOT(most == batch_size,
                     "batch sampler: no batch of " << batch_size << " rows without a repeated text exists in these "
                                                   << data.size() << " examples (at most " << most
                                                   << " rows with distinct texts were found; many rows share an "
                                                      "anchor or positive): lower the batch size or deduplicate");
  start_epoch();
  epoch_ = 0;
}

void BatchSampler::start_epoch() {
  const size_t n = data_->size();
  std::vector<size_t> perm(n);
  std::iota(perm.begin(), perm.end(), size_t{0});
  for (size_t i = n; i > 1; --i) std::swap(perm[i - 1], perm[uniform_below(rng_, i)]);
  // Rows still waiting from the last epoch count as this epoch's use of them, so a row that keeps
  // being deferred waits once instead of piling up.
  std::vector<char> waiting(n, 0);
  for (size_t r : order_) waiting[r] = 1;
  for (size_t r : perm)
    if (!waiting[r]) order_.push_back(r);
  ++epoch_;
}

std::vector<size_t> BatchSampler::next() {
  const std::vector<TrainExample>& data = *data_;
  std::vector<size_t> batch;
  batch.reserve(batch_size_);
  TextSet used;
  std::vector<std::string_view> scratch;
  bool began_epoch = false;
  if (order_.empty()) {
    start_epoch();
    began_epoch = true;
  }
  // Scan order_ from the front; rows that would repeat a text are compacted at the front (kept in
  // order, first in line for the next batch).
  size_t read = 0, kept = 0;
  while (batch.size() < batch_size_) {
    if (read == order_.size()) {
      order_.resize(kept);
      if (began_epoch) break;  // every row has been tried against this batch
      // The epoch's leftovers cannot fill the batch: they stay first, the next epoch follows.
      start_epoch();
      began_epoch = true;
      read = kept;  // the kept rows were tried already
      continue;
    }
    const size_t r = order_[read++];
    if (take_if_fits(data[r], used, scratch)) {
      batch.push_back(r);
    } else {
      order_[kept++] = r;
    }
  }
  if (batch.size() == batch_size_) {
    order_.erase(order_.begin() + static_cast<std::ptrdiff_t>(kept), order_.begin() + static_cast<std::ptrdiff_t>(read));
    return batch;
  }
  // Greedy in this order got stuck: the rows taken so far exclude every other row. Put them back
  // in line and return a batch known to exist (the constructor found it); its rows count as used.
  std::vector<size_t> line = batch;
  line.insert(line.end(), order_.begin(), order_.end());
  std::vector<char> seen(data.size(), 0);
  order_.clear();
  for (size_t r : line)
    if (!seen[r]) seen[r] = 1, order_.push_back(r);
  batch = witness_batch(data, batch_size_);
  SIEVE_ASSERT(batch.size() == batch_size_);
  std::vector<char> in_batch(data.size(), 0);
  for (size_t r : batch) in_batch[r] = 1;
  order_.erase(std::remove_if(order_.begin(), order_.end(), [&](size_t r) { return in_batch[r] != 0; }),
               order_.end());
  return batch;
}

std::string BatchSampler::state() const {
  std::ostringstream out;
  out << kStateMagic << ' ' << kStateVersion << '\n'
      << "rows " << data_->size() << '\n'
      << "batch " << batch_size_ << '\n'
      << "data " << std::hex << data_fingerprint(*data_) << std::dec << '\n'
      << "epoch " << epoch_ << '\n'
      << "order " << order_.size();
  for (size_t r : order_) out << ' ' << r;
  out << '\n' << "rng " << rng_ << '\n';
  return out.str();
}

void BatchSampler::restore(const std::string& state) {
  std::istringstream in(state);
  auto expect = [&](const char* key) {
    std::string word;
    SIEVE_THROW_IF_NOT(in >> word && word == key, "batch sampler state: expected '"
                                                      << key << "', got '" << word
                                                      << "' (not a text from BatchSampler::state())");
  };
  expect(kStateMagic);
  int version = 0;
  SIEVE_THROW_IF_NOT(in >> version && version == kStateVersion,
                     "batch sampler state: unsupported version " << version << " (this build reads " << kStateVersion
                                                                 << ")");
  size_t rows = 0, batch = 0, epoch = 0, n_order = 0;
  uint64_t fingerprint = 0;
  expect("rows");
  SIEVE_THROW_IF_NOT(in >> rows, "batch sampler state: bad row count");
  SIEVE_THROW_IF_NOT(rows == data_->size(), "batch sampler state: saved for " << rows << " examples, this sampler has "
                                                                              << data_->size());
  expect("batch");
  SIEVE_THROW_IF_NOT(in >> batch, "batch sampler state: bad batch size");
  SIEVE_THROW_IF_NOT(batch == batch_size_, "batch sampler state: saved with batch size " << batch
                                                                                         << ", this sampler has "
                                                                                         << batch_size_);
  expect("data");
  SIEVE_THROW_IF_NOT(in >> std::hex >> fingerprint >> std::dec, "batch sampler state: bad data fingerprint");
  SIEVE_THROW_IF_NOT(fingerprint == data_fingerprint(*data_),
                     "batch sampler state: saved for other training data (same size, different texts)");
  expect("epoch");
  SIEVE_THROW_IF_NOT(in >> epoch, "batch sampler state: bad epoch");
  expect("order");
  SIEVE_THROW_IF_NOT(in >> n_order && n_order <= rows, "batch sampler state: bad order length");
  std::vector<size_t> order(n_order);
  std::vector<char> seen(rows, 0);
  for (size_t& r : order) {
    SIEVE_THROW_IF_NOT(in >> r && r < rows && !seen[r], "batch sampler state: bad or repeated row in the order");
    seen[r] = 1;
  }
  expect("rng");
  std::mt19937_64 rng;
  SIEVE_THROW_IF_NOT(in >> rng, "batch sampler state: bad random generator state");
  // Assigned only now, so a failed restore leaves the sampler as it was.
  order_ = std::move(order);
  rng_ = rng;
  epoch_ = epoch;
}

}  // namespace sieve::train
