#include "index/residual_codec.h"

#include <faiss/Clustering.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <random>
#include <regex>

#include "core/checksum.h"
#include "core/file_util.h"
#include "sieve/error.h"

namespace sieve::index {
namespace {

constexpr char kMagic[8] = {'S', 'I', 'E', 'V', 'E', 'R', 'E', 'S'};
constexpr uint32_t kVersion = 1;
constexpr size_t kMinPerCentroid = 16;
constexpr size_t kMaxQuantileSample = size_t{1} << 22;

template <class T>
void put(std::string& out, const T& v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}

template <class T>
T get(const std::string& in, size_t& at, const std::string& path) {
  SIEVE_THROW_IF_NOT(at + sizeof(T) <= in.size(), "residual codec '" << path << "' is truncated (damaged)");
  T v;
  std::memcpy(&v, in.data() + at, sizeof v);
  at += sizeof v;
  return v;
}

}  // namespace

std::unique_ptr<ResidualCodecIndex> ResidualCodecIndex::from_factory(const std::string& factory, size_t dim) {
  static const std::regex re("RES([0-9]+)x([0-9]+)");
  std::smatch m;
  if (!std::regex_match(factory, m, re)) return nullptr;
  const unsigned long k = std::stoul(m[1].str());
  const int bits = std::stoi(m[2].str());
  SIEVE_THROW_IF_NOT(k >= 1 && k <= 65536, "codec '" << factory << "': 1 to 65,536 centroids (a 2-byte id)");
  SIEVE_THROW_IF_NOT(bits == 1 || bits == 2 || bits == 4, "codec '" << factory << "': 1, 2 or 4 bits per component");
  return std::make_unique<ResidualCodecIndex>(dim, k, bits);
}

ResidualCodecIndex::ResidualCodecIndex(size_t dim, size_t centroids, int bits)
    : faiss::Index(static_cast<faiss::Index::idx_t>(dim), faiss::METRIC_L2),
      max_k_(centroids),
      bits_(bits),
      nearest_(static_cast<faiss::Index::idx_t>(dim)) {
  is_trained = false;
}

void ResidualCodecIndex::train(faiss::Index::idx_t n, const float* x) {
  if (is_trained) return;
  const size_t nn = static_cast<size_t>(n), dd = static_cast<size_t>(d);
  SIEVE_THROW_IF_NOT(nn >= 2 * kMinPerCentroid, "a residual codec needs at least " << 2 * kMinPerCentroid
                                                                               << " token vectors to train");
  k_ = std::max<size_t>(1, std::min(max_k_, nn / kMinPerCentroid));
  centroids_.assign(k_ * dd, 0.0f);
  faiss::ClusteringParameters cp;
  cp.niter = 20;
  cp.seed = 1234;
  cp.max_points_per_centroid = 256;
  cp.min_points_per_centroid = static_cast<int>(kMinPerCentroid);  // k is capped to match: no warning
  cp.verbose = false;
  faiss::Clustering clus(d, static_cast<int>(k_), cp);
  faiss::IndexFlatL2 assign(d);
  clus.train(n, x, assign);
  std::copy(clus.centroids.begin(), clus.centroids.end(), centroids_.begin());
  nearest_.reset();
  nearest_.add(static_cast<faiss::Index::idx_t>(k_), centroids_.data());

  // Quantiles of the residuals' components (a spread sample of them when there are many).
  std::vector<faiss::Index::idx_t> label(nn);
  std::vector<float> dist(nn);
  nearest_.search(n, x, 1, dist.data(), label.data());
  const size_t total = nn * dd, step = std::max<size_t>(1, total / kMaxQuantileSample);
  std::vector<float> r;
  r.reserve(total / step + 1);
  for (size_t i = 0; i < total; i += step) {
    const size_t row = i / dd, col = i % dd;
    r.push_back(x[i] - centroids_[static_cast<size_t>(label[row]) * dd + col]);
  }
  std::sort(r.begin(), r.end());
  const size_t buckets = size_t{1} << bits_;
  auto quantile = [&](double q) { return r[std::min(r.size() - 1, static_cast<size_t>(q * r.size()))]; };
  cutoffs_.resize(buckets - 1);
  values_.resize(buckets);
  for (size_t j = 1; j < buckets; ++j) cutoffs_[j - 1] = quantile(double(j) / buckets);
  for (size_t j = 0; j < buckets; ++j) values_[j] = quantile((j + 0.5) / buckets);
  is_trained = true;
}

size_t ResidualCodecIndex::sa_code_size() const { return 2 + (static_cast<size_t>(d) * bits_ + 7) / 8; }

void ResidualCodecIndex::sa_encode(faiss::Index::idx_t n, const float* x, uint8_t* codes) const {
  SIEVE_THROW_IF_NOT(is_trained, "internal: encoding with an untrained residual codec");
  const size_t nn = static_cast<size_t>(n), dd = static_cast<size_t>(d), cs = sa_code_size();
  std::vector<faiss::Index::idx_t> label(nn);
  std::vector<float> dist(nn);
  nearest_.search(n, x, 1, dist.data(), label.data());
  std::memset(codes, 0, nn * cs);
  for (size_t i = 0; i < nn; ++i) {
    uint8_t* c = codes + i * cs;
    const auto id = static_cast<uint16_t>(label[i]);
    c[0] = static_cast<uint8_t>(id & 0xff);
    c[1] = static_cast<uint8_t>(id >> 8);
    const float* centroid = centroids_.data() + static_cast<size_t>(label[i]) * dd;
    for (size_t h = 0; h < dd; ++h) {
      const float v = x[i * dd + h] - centroid[h];
      const auto b = static_cast<unsigned>(std::upper_bound(cutoffs_.begin(), cutoffs_.end(), v) - cutoffs_.begin());
      const size_t bit = h * bits_;
      c[2 + bit / 8] |= static_cast<uint8_t>(b << (bit % 8));
    }
  }
}

void ResidualCodecIndex::sa_decode(faiss::Index::idx_t n, const uint8_t* codes, float* x) const {
  const size_t nn = static_cast<size_t>(n), dd = static_cast<size_t>(d), cs = sa_code_size();
  const unsigned mask = (1u << bits_) - 1;
  for (size_t i = 0; i < nn; ++i) {
    const uint8_t* c = codes + i * cs;
    const size_t id = c[0] | (size_t{c[1]} << 8);
    SIEVE_THROW_IF_NOT(id < k_, "a residual code names centroid " << id << " of " << k_ << " (damaged)");
    const float* centroid = centroids_.data() + id * dd;
    for (size_t h = 0; h < dd; ++h) {
      const size_t bit = h * bits_;
      x[i * dd + h] = centroid[h] + values_[(c[2 + bit / 8] >> (bit % 8)) & mask];
    }
  }
}

void ResidualCodecIndex::add(faiss::Index::idx_t, const float*) { SIEVE_THROW("internal: a residual codec stores no vectors"); }
void ResidualCodecIndex::search(faiss::Index::idx_t, const float*, faiss::Index::idx_t, float*, faiss::Index::idx_t*,
                                const faiss::SearchParameters*) const {
  SIEVE_THROW("internal: a residual codec does not search");
}
void ResidualCodecIndex::reset() {}

void ResidualCodecIndex::save(const std::string& path) const {
  std::string out(kMagic, sizeof kMagic);
  put(out, kVersion);
  put(out, static_cast<uint32_t>(d));
  put(out, static_cast<uint32_t>(k_));
  put(out, static_cast<uint32_t>(bits_));
  for (const auto* v : {&centroids_, &cutoffs_, &values_}) out.append(reinterpret_cast<const char*>(v->data()), v->size() * sizeof(float));
  put(out, crc32(out.data(), out.size()));
  write_file_atomic(path, out);
}

bool ResidualCodecIndex::is_file(const std::string& path) {
  char head[sizeof kMagic] = {};
  std::ifstream f(path, std::ios::binary);
  return f.read(head, sizeof head) && std::memcmp(head, kMagic, sizeof kMagic) == 0;
}

std::unique_ptr<ResidualCodecIndex> ResidualCodecIndex::load(const std::string& path) {
  const std::string in = read_file(path);
  SIEVE_THROW_IF_NOT(in.size() > sizeof kMagic + 4 && std::memcmp(in.data(), kMagic, sizeof kMagic) == 0,
                     "'" << path << "' is not a residual codec");
  uint32_t stored = 0;
  std::memcpy(&stored, in.data() + in.size() - 4, 4);
  SIEVE_THROW_IF_NOT(stored == crc32(in.data(), in.size() - 4), "residual codec '" << path << "': checksum mismatch (damaged)");
  size_t at = sizeof kMagic;
  SIEVE_THROW_IF_NOT(get<uint32_t>(in, at, path) == kVersion, "residual codec '" << path << "' has an unknown version");
  const uint32_t dim = get<uint32_t>(in, at, path), k = get<uint32_t>(in, at, path), bits = get<uint32_t>(in, at, path);
  SIEVE_THROW_IF_NOT(dim > 0 && k >= 1 && k <= 65536 && (bits == 1 || bits == 2 || bits == 4),
                     "residual codec '" << path << "' has a bad header (damaged)");
  auto c = std::make_unique<ResidualCodecIndex>(dim, k, static_cast<int>(bits));
  c->k_ = k;
  const size_t buckets = size_t{1} << bits;
  c->centroids_.resize(size_t{k} * dim);
  c->cutoffs_.resize(buckets - 1);
  c->values_.resize(buckets);
  for (auto* v : {&c->centroids_, &c->cutoffs_, &c->values_}) {
    const size_t bytes = v->size() * sizeof(float);
    SIEVE_THROW_IF_NOT(at + bytes + 4 <= in.size(), "residual codec '" << path << "' is truncated (damaged)");
    std::memcpy(v->data(), in.data() + at, bytes);
    at += bytes;
  }
  SIEVE_THROW_IF_NOT(at + 4 == in.size(), "residual codec '" << path << "' has trailing bytes (damaged)");
  c->nearest_.add(static_cast<faiss::Index::idx_t>(k), c->centroids_.data());
  c->is_trained = true;
  return c;
}

}  // namespace sieve::index
