// Data-parallel primitives over c10d's ProcessGroupGloo (see distributed.h). Only this file sees
// the c10d and Gloo headers.
#include "train/distributed.h"

// Debian's libtorch is built with Gloo, but its CMake config does not export USE_C10D_GLOO, and
// ProcessGroupGloo.hpp is empty without it.
#ifndef USE_C10D_GLOO
#define USE_C10D_GLOO 1
#endif
#include <ATen/ATen.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <torch/csrc/distributed/c10d/FileStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <utility>

#include "sieve/error.h"

extern char** environ;

namespace sieve::train {
namespace {

constexpr const char* kEnvRank = "SIEVE_RANK";
constexpr const char* kEnvWorld = "SIEVE_WORLD_SIZE";
constexpr const char* kEnvStore = "SIEVE_DIST_STORE";
constexpr const char* kEnvTimeout = "SIEVE_DIST_TIMEOUT";

/// The parsed DistOptions::store.
struct StoreSpec {
  bool file = true;
  std::string path;  ///< file store
  std::string host;  ///< tcp store
  uint16_t port = 0;
};

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

StoreSpec parse_store(const std::string& store) {
  const char* usage = "use \"file:/path/to/new-or-empty-file\" or \"tcp:HOST:PORT\"";
  StoreSpec spec;
  if (starts_with(store, "file:")) {
    spec.file = true;
    spec.path = store.substr(5);
    if (starts_with(spec.path, "//")) spec.path = spec.path.substr(2);  // file:///tmp/x, as PyTorch writes it
    SIEVE_THROW_IF_NOT(!spec.path.empty(), "DistOptions.store '" << store << "' names no file; " << usage);
    return spec;
  }
  if (starts_with(store, "tcp:")) {
    spec.file = false;
    std::string rest = store.substr(4);
    if (starts_with(rest, "//")) rest = rest.substr(2);
    const size_t colon = rest.rfind(':');
    SIEVE_THROW_IF_NOT(colon != std::string::npos && colon > 0 && colon + 1 < rest.size(),
                       "DistOptions.store '" << store << "' needs a host and a port; " << usage);
    spec.host = rest.substr(0, colon);
    if (spec.host.size() >= 2 && spec.host.front() == '[' && spec.host.back() == ']')
      spec.host = spec.host.substr(1, spec.host.size() - 2);  // [::1]:29500
    const std::string port = rest.substr(colon + 1);
    char* end = nullptr;
    errno = 0;
    const long p = std::strtol(port.c_str(), &end, 10);
    SIEVE_THROW_IF_NOT(errno == 0 && end != nullptr && *end == '\0' && p >= 1 && p <= 65535,
                       "DistOptions.store '" << store << "': port '" << port << "' is not a number in 1..65535");
    spec.port = static_cast<uint16_t>(p);
    return spec;
  }
  SIEVE_THROW("unknown DistOptions.store scheme in '" << store << "': " << usage);
}

bool is_loopback(const std::string& host) {
  return host == "localhost" || host == "::1" || starts_with(host, "127.");
}

/// The network device Gloo binds its pairs to.
std::shared_ptr<::gloo::transport::Device> make_device(const StoreSpec& spec) {
  const char* ifname = std::getenv("GLOO_SOCKET_IFNAME");
  if (ifname != nullptr && *ifname != '\0') return c10d::ProcessGroupGloo::createDeviceForInterface(ifname);
  if (!spec.file && is_loopback(spec.host)) return c10d::ProcessGroupGloo::createDeviceForHostname(spec.host);
  return c10d::ProcessGroupGloo::createDefaultDevice();
}

/// Runs `f`, turning c10d / Gloo exceptions into sieve::Error that say which operation failed.
template <class F>
auto guarded(const std::string& what, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const sieve::Error&) {
    throw;
  } catch (const c10::Error& e) {
    SIEVE_THROW("data-parallel " << what << " failed: " << e.what_without_backtrace());
  } catch (const std::exception& e) {
    SIEVE_THROW("data-parallel " << what << " failed: " << e.what());
  }
}

/// Tensors grouped by (dtype, device), in order of first appearance, for one flat buffer each.
struct Group {
  at::ScalarType dtype;
  at::Device device;
  std::vector<at::Tensor> tensors;
};

std::vector<Group> group_by_type(const std::vector<at::Tensor>& tensors) {
  std::vector<Group> groups;
  for (const at::Tensor& t : tensors) {
    Group* g = nullptr;
    for (Group& c : groups)
      if (c.dtype == t.scalar_type() && c.device == t.device()) g = &c;
    if (g == nullptr) {
      groups.push_back(Group{t.scalar_type(), t.device(), {}});
      g = &groups.back();
    }
    g->tensors.push_back(t);
  }
  return groups;
}

at::Tensor flatten(const std::vector<at::Tensor>& tensors) {
  std::vector<at::Tensor> flat;
  flat.reserve(tensors.size());
  for (const at::Tensor& t : tensors) flat.push_back(t.detach().reshape({-1}));
  return at::cat(flat);
}

void unflatten_into(const at::Tensor& flat, const std::vector<at::Tensor>& tensors) {
  int64_t offset = 0;
  for (const at::Tensor& t : tensors) {
    const int64_t n = t.numel();
    t.copy_(flat.narrow(0, offset, n).view(t.sizes()));
    offset += n;
  }
}

int64_t fnv1a(int64_t h, int64_t v) {
  uint64_t x = static_cast<uint64_t>(h);
  for (int i = 0; i < 8; ++i) {
    x ^= (static_cast<uint64_t>(v) >> (8 * i)) & 0xffu;
    x *= 1099511628211ull;
  }
  return static_cast<int64_t>(x & 0x7fffffffffffffffull);
}

std::string shape_str(const int64_t* meta, int64_t dim) {
  std::ostringstream s;
  s << "[n";
  for (int64_t i = 1; i < dim; ++i) s << ", " << meta[i - 1];
  s << "]";
  return s.str();
}

int parse_env_int(const char* name, const char* value) {
  char* end = nullptr;
  errno = 0;
  const long v = std::strtol(value, &end, 10);
  SIEVE_THROW_IF_NOT(errno == 0 && end != value && *end == '\0' && v >= INT32_MIN && v <= INT32_MAX,
                     "environment variable " << name << "='" << value << "' is not an integer");
  return static_cast<int>(v);
}

}  // namespace

// ------------------------------------------------------------------------------------------------

struct DataParallel::Impl {
  std::chrono::milliseconds timeout{0};
  c10::intrusive_ptr<c10d::Store> store;           // declared before pg: destroyed after it
  c10::intrusive_ptr<c10d::ProcessGroupGloo> pg;

  /// Creates the store and the process group (blocks until every rank has joined).
  void connect(const DistOptions& o, const StoreSpec& spec) {
    if (spec.file) {
      store = c10::make_intrusive<c10d::FileStore>(spec.path, o.world_size);
      store->setTimeout(timeout);
    } else {
      c10d::TCPStoreOptions so;
      so.port = spec.port;
      so.isServer = o.rank == 0;
      so.numWorkers = static_cast<size_t>(o.world_size);
      so.waitWorkers = true;
      so.timeout = timeout;
      store = c10::make_intrusive<c10d::TCPStore>(spec.host, so);
    }
    auto popts = c10d::ProcessGroupGloo::Options::create(timeout);
    popts->devices.push_back(make_device(spec));
    pg = c10::make_intrusive<c10d::ProcessGroupGloo>(store, o.rank, o.world_size, popts);
  }

  void wait(const c10::intrusive_ptr<c10d::Work>& work) { work->wait(); }

  /// All-gathers one small int64 vector from every rank: result[r] is rank r's.
  std::vector<at::Tensor> gather_meta(const at::Tensor& meta, int world) {
    std::vector<std::vector<at::Tensor>> out(1);
    for (int r = 0; r < world; ++r) out[0].push_back(at::empty_like(meta));
    std::vector<at::Tensor> in{meta};
    wait(pg->allgather(out, in));
    return out[0];
  }
};

DataParallel::DataParallel(const DistOptions& o) : rank_(o.rank), world_size_(o.world_size) {
  SIEVE_THROW_IF_NOT(o.world_size >= 1, "DistOptions.world_size must be >= 1 (got " << o.world_size << ")");
  SIEVE_THROW_IF_NOT(o.rank >= 0 && o.rank < o.world_size, "DistOptions.rank must be in 0.." << o.world_size - 1
                                                                << " for world_size " << o.world_size << " (got "
                                                                << o.rank << ")");
  SIEVE_THROW_IF_NOT(std::isfinite(o.timeout_s) && o.timeout_s > 0,
                     "DistOptions.timeout_s must be a positive number of seconds (got " << o.timeout_s << ")");
  SIEVE_THROW_IF_NOT(o.world_size == 1 || !o.store.empty(),
                     "DistOptions.store is empty: a group of " << o.world_size
                         << " processes needs a rendezvous, \"file:/path\" or \"tcp:HOST:PORT\"");
  StoreSpec spec;
  if (!o.store.empty()) spec = parse_store(o.store);  // checked even when unused: a typo is a mistake
  if (o.world_size == 1) return;
  if (spec.file) {
    const size_t slash = spec.path.rfind('/');
    const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : spec.path.substr(0, slash);
    struct stat st {};
    SIEVE_THROW_IF_NOT(::stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode),
                       "DistOptions.store '" << o.store << "': the directory " << dir
                                             << " of the rendezvous file does not exist");
  }

  impl_ = std::make_unique<Impl>();
  impl_->timeout = std::chrono::milliseconds(std::max<int64_t>(1, std::llround(o.timeout_s * 1000.0)));
  std::ostringstream where;
  where << "rendezvous of rank " << o.rank << " of " << o.world_size << " through '" << o.store << "'";
  try {
    guarded(where.str(), [&] { impl_->connect(o, spec); });
  } catch (const sieve::Error& e) {
    SIEVE_THROW(e.what() << " (timeout " << o.timeout_s << " s; are all " << o.world_size
                         << " ranks running, with the same store and world size?)");
  }
}

DataParallel::~DataParallel() = default;

int DataParallel::rank() const { return rank_; }
int DataParallel::world_size() const { return world_size_; }
bool DataParallel::active() const { return world_size_ > 1; }

void DataParallel::sum_gradients(const std::vector<at::Tensor>& params) {
  if (!impl_) return;
  at::NoGradGuard no_grad;
  std::vector<at::Tensor> grads;
  grads.reserve(params.size());
  for (size_t i = 0; i < params.size(); ++i) {
    const at::Tensor& p = params[i];
    SIEVE_THROW_IF_NOT(p.defined(), "sum_gradients: parameter " << i << " is an undefined tensor");
    if (!p.grad().defined()) p.mutable_grad() = at::zeros_like(p);
    SIEVE_THROW_IF_NOT(!p.grad().is_sparse(), "sum_gradients: parameter " << i << " has a sparse gradient");
    grads.push_back(p.grad());
  }
  if (grads.empty()) return;
  guarded("sum_gradients (all-reduce)", [&] {
    for (const Group& g : group_by_type(grads)) {
      std::vector<at::Tensor> flat{flatten(g.tensors)};
      impl_->wait(impl_->pg->allreduce(flat));
      unflatten_into(flat[0], g.tensors);
    }
  });
}

at::Tensor DataParallel::all_gather(const at::Tensor& local) {
  SIEVE_THROW_IF_NOT(local.defined(), "all_gather: the local tensor is undefined");
  if (!impl_) return local.detach();
  constexpr int64_t kMaxDims = 16;
  // meta = [rows, dim, dtype, size(1), ..., size(dim-1), -1 ...]: every rank checks every rank's,
  // so a mismatch throws on all ranks alike instead of hanging one of them.
  const int64_t dim = local.dim();
  at::Tensor meta = at::full({3 + kMaxDims}, -1, at::TensorOptions().dtype(at::kLong));
  int64_t* m = meta.data_ptr<int64_t>();
  m[0] = dim >= 1 ? local.size(0) : -1;
  m[1] = dim;
  m[2] = static_cast<int64_t>(local.scalar_type());
  for (int64_t i = 1; i < std::min(dim, kMaxDims); ++i) m[2 + i] = local.size(i);

  const int world = world_size_;
  std::vector<at::Tensor> metas = guarded("all_gather (sizes)", [&] { return impl_->gather_meta(meta, world); });
  std::vector<int64_t> rows(world);
  const int64_t* m0 = metas[0].data_ptr<int64_t>();
  for (int r = 0; r < world; ++r) {
    const int64_t* mr = metas[r].data_ptr<int64_t>();
    SIEVE_THROW_IF_NOT(mr[1] >= 1 && mr[1] <= kMaxDims, "all_gather: rank " << r << " passed a tensor with " << mr[1]
                                                                                << " dims; it needs 1.." << kMaxDims);
    SIEVE_THROW_IF_NOT(mr[2] == m0[2], "all_gather: rank " << r << " passed dtype "
                                           << c10::toString(static_cast<at::ScalarType>(mr[2])) << " but rank 0 "
                                           << c10::toString(static_cast<at::ScalarType>(m0[2])));
    SIEVE_THROW_IF_NOT(std::equal(mr + 1, mr + 3 + kMaxDims, m0 + 1),
                       "all_gather: rank " << r << " passed shape " << shape_str(mr + 3, mr[1]) << " but rank 0 "
                                           << shape_str(m0 + 3, m0[1]) << "; only dim 0 may differ");
    rows[r] = mr[0];
  }
  const int64_t max_rows = *std::max_element(rows.begin(), rows.end());
  std::vector<int64_t> shape = local.sizes().vec();
  shape[0] = max_rows;
  if (max_rows == 0) return at::empty(shape, local.options().requires_grad(false));

  at::NoGradGuard no_grad;
  return guarded("all_gather", [&] {
    at::Tensor padded = at::zeros(shape, local.options().requires_grad(false));
    if (rows[rank_] > 0) padded.narrow(0, 0, rows[rank_]).copy_(local.detach());
    std::vector<std::vector<at::Tensor>> out(1);
    for (int r = 0; r < world; ++r) out[0].push_back(at::empty_like(padded));
    std::vector<at::Tensor> in{padded};
    impl_->wait(impl_->pg->allgather(out, in));
    std::vector<at::Tensor> parts;
    for (int r = 0; r < world; ++r) parts.push_back(out[0][r].narrow(0, 0, rows[r]));
    return at::cat(parts);
  });
}

void DataParallel::broadcast(const std::vector<at::Tensor>& tensors) {
  if (!impl_) return;
  // Every rank checks that all ranks pass the same list (count, dtypes, shapes) before any data moves.
  int64_t signature = 1469598103934665603ll & 0x7fffffffffffffffll;
  int64_t numel = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const at::Tensor& t = tensors[i];
    SIEVE_THROW_IF_NOT(t.defined(), "broadcast: tensor " << i << " is undefined");
    signature = fnv1a(signature, static_cast<int64_t>(t.scalar_type()));
    signature = fnv1a(signature, t.dim());
    for (int64_t s : t.sizes()) signature = fnv1a(signature, s);
    numel += t.numel();
  }
  at::Tensor meta = at::tensor(std::vector<int64_t>{static_cast<int64_t>(tensors.size()), numel, signature});
  const int world = world_size_;
  std::vector<at::Tensor> metas = guarded("broadcast (shapes)", [&] { return impl_->gather_meta(meta, world); });
  for (int r = 1; r < world; ++r)
    SIEVE_THROW_IF_NOT(at::equal(metas[r], metas[0]),
                       "broadcast: rank " << r << " passed " << metas[r][0].item<int64_t>() << " tensors of "
                                          << metas[r][1].item<int64_t>() << " elements, rank 0 passed "
                                          << metas[0][0].item<int64_t>() << " tensors of "
                                          << metas[0][1].item<int64_t>()
                                          << " elements (or their shapes or dtypes differ)");
  at::NoGradGuard no_grad;
  guarded("broadcast", [&] {
    for (const Group& g : group_by_type(tensors)) {
      std::vector<at::Tensor> flat{flatten(g.tensors)};
      c10d::BroadcastOptions bo;
      bo.rootRank = 0;
      impl_->wait(impl_->pg->broadcast(flat, bo));
      if (rank_ != 0) unflatten_into(flat[0], g.tensors);
    }
  });
}

double DataParallel::sum(double v) {
  if (!impl_) return v;
  return guarded("sum", [&] {
    std::vector<at::Tensor> t{at::full({1}, v, at::TensorOptions().dtype(at::kDouble))};
    impl_->wait(impl_->pg->allreduce(t));
    return t[0].item<double>();
  });
}

void DataParallel::barrier() {
  if (!impl_) return;
  guarded("barrier", [&] { impl_->wait(impl_->pg->barrier()); });
}

// ------------------------------------------------------------------------------------------------

std::vector<int> spawn_local_workers(int world_size, char** argv) {
  SIEVE_THROW_IF_NOT(world_size >= 1, "spawn_local_workers: world_size must be >= 1 (got " << world_size << ")");
  SIEVE_THROW_IF_NOT(argv != nullptr && argv[0] != nullptr, "spawn_local_workers: argv is empty");
  SIEVE_THROW_IF_NOT(std::getenv(kEnvRank) == nullptr,
                     "spawn_local_workers: this process is already data-parallel worker "
                         << std::getenv(kEnvRank) << " (" << kEnvRank << " is set); only the launcher spawns");
  if (world_size == 1) return {};

  const char* tmpdir = std::getenv("TMPDIR");
  std::string path = std::string(tmpdir != nullptr && *tmpdir != '\0' ? tmpdir : "/tmp") + "/sieve_dist_XXXXXX";
  const int fd = ::mkstemp(path.data());
  SIEVE_THROW_IF_NOT(fd >= 0, "spawn_local_workers: cannot create the rendezvous file " << path << ": "
                                                                                          << std::strerror(errno));
  ::close(fd);  // FileStore accepts an existing empty file; the last rank to finish deletes it
  const std::string store = "file:" + path;
  const std::string world = std::to_string(world_size);

  // Everything the children need is built before fork(): between fork and exec a child of a
  // multi-threaded process may only make async-signal-safe calls.
  std::vector<std::string> base;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string kv(*e);
    if (starts_with(kv, "SIEVE_RANK=") || starts_with(kv, "SIEVE_WORLD_SIZE=") || starts_with(kv, "SIEVE_DIST_STORE="))
      continue;
    base.push_back(kv);
  }
  base.push_back(std::string(kEnvWorld) + "=" + world);
  base.push_back(std::string(kEnvStore) + "=" + store);
  std::vector<std::vector<std::string>> envs;
  for (int r = 1; r < world_size; ++r) {
    envs.push_back(base);
    envs.back().push_back(std::string(kEnvRank) + "=" + std::to_string(r));
  }
  std::vector<std::vector<char*>> envps;
  for (auto& env : envs) {
    envps.emplace_back();
    for (std::string& kv : env) envps.back().push_back(kv.data());
    envps.back().push_back(nullptr);
  }
  const pid_t parent = ::getpid();
  static const char kExecFailed[] = "sieve: spawn_local_workers: exec of /proc/self/exe failed\n";

  std::vector<int> pids;
  for (int r = 1; r < world_size; ++r) {
    const pid_t pid = ::fork();
    if (pid < 0) {
      const int err = errno;
      kill_workers(pids);
      ::unlink(path.c_str());
      SIEVE_THROW("spawn_local_workers: fork of worker " << r << " failed: " << std::strerror(err));
    }
    if (pid == 0) {
      // A worker should not outlive its launcher (the thread that forked it, strictly).
      ::prctl(PR_SET_PDEATHSIG, SIGTERM);
      if (::getppid() != parent) ::_exit(126);
      ::execve("/proc/self/exe", argv, envps[r - 1].data());
      ssize_t ignored = ::write(2, kExecFailed, sizeof kExecFailed - 1);
      (void)ignored;
      ::_exit(127);
    }
    pids.push_back(static_cast<int>(pid));
  }
  ::setenv(kEnvRank, "0", 1);
  ::setenv(kEnvWorld, world.c_str(), 1);
  ::setenv(kEnvStore, store.c_str(), 1);
  return pids;
}

namespace {
int status_code(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}
}  // namespace

int wait_workers(const std::vector<int>& pids) {
  int first = 0;
  for (int pid : pids) {
    int status = 0;
    pid_t got;
    do {
      got = ::waitpid(pid, &status, 0);
    } while (got < 0 && errno == EINTR);
    SIEVE_THROW_IF_NOT(got == pid, "wait_workers: cannot wait for pid " << pid << ": " << std::strerror(errno)
                                                                        << " (not a child, or already reaped)");
    const int code = status_code(status);
    if (first == 0) first = code;
  }
  return first;
}

void kill_workers(const std::vector<int>& pids) {
  std::vector<int> alive;
  for (int pid : pids) {
    if (pid <= 0) continue;
    if (::kill(pid, SIGTERM) == 0 || errno != ESRCH) alive.push_back(pid);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (!alive.empty()) {
    std::vector<int> still;
    for (int pid : alive) {
      int status = 0;
      const pid_t got = ::waitpid(pid, &status, WNOHANG);
      if (got == 0) still.push_back(pid);  // running; got < 0: not our child (any more)
    }
    alive.swap(still);
    if (alive.empty()) break;
    if (std::chrono::steady_clock::now() >= deadline) {
      for (int pid : alive) {
        ::kill(pid, SIGKILL);
        int status = 0;
        while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
      }
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

DistOptions dist_options_from_env() {
  const char* rank = std::getenv(kEnvRank);
  const char* world = std::getenv(kEnvWorld);
  const char* store = std::getenv(kEnvStore);
  const char* timeout = std::getenv(kEnvTimeout);
  DistOptions o;
  if (timeout != nullptr && *timeout != '\0') {
    char* end = nullptr;
    o.timeout_s = std::strtod(timeout, &end);
    SIEVE_THROW_IF_NOT(end != timeout && *end == '\0' && o.timeout_s > 0,
                       "environment variable " << kEnvTimeout << "='" << timeout
                                               << "' is not a positive number of seconds");
  }
  if (rank == nullptr && world == nullptr && store == nullptr) return o;
  SIEVE_THROW_IF_NOT(rank != nullptr && world != nullptr && store != nullptr,
                     "data-parallel environment is incomplete: " << kEnvRank << ", " << kEnvWorld << " and "
                                                                 << kEnvStore << " must be set together (missing:"
                                                                 << (rank ? "" : " SIEVE_RANK")
                                                                 << (world ? "" : " SIEVE_WORLD_SIZE")
                                                                 << (store ? "" : " SIEVE_DIST_STORE") << ")");
  o.rank = parse_env_int(kEnvRank, rank);
  o.world_size = parse_env_int(kEnvWorld, world);
  o.store = store;
  return o;
}

}  // namespace sieve::train
