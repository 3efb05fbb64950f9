// Data-parallel primitives (train/distributed.h) over c10d + Gloo.
//
// The multi-process tests re-execute this binary (/proc/self/exe) with SIEVE_TEST_DIST_MODE set
// and --gtest_filter=DistributedWorker.Run: each copy is one rank, checks its results with gtest
// assertions and reports through its exit status. The parent test only forks, execs and waits
// (with a deadline, so nothing can hang), so no torch thread pool is ever forked.
#include <ATen/ATen.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "support/test_util.h"
#include "train/distributed.h"

extern char** environ;

namespace st = sieve::train;
using sieve::test::error_of;
using sieve::test::expect_error;

namespace {

constexpr const char* kModeEnv = "SIEVE_TEST_DIST_MODE";
const auto kF = at::TensorOptions().dtype(at::kFloat);
const auto kD = at::TensorOptions().dtype(at::kDouble);
const auto kL = at::TensorOptions().dtype(at::kLong);

// ---- the checks every rank of a 2-process group runs ------------------------------------------

void check_sum_gradients(st::DataParallel& dp) {
  const int r = dp.rank();
  at::Tensor a = at::zeros({2, 3}, kF).requires_grad_(true);
  a.mutable_grad() = at::arange(6, kF).view({2, 3}) * (r + 1);  // sum: 3 * arange
  at::Tensor b = at::zeros({4}, kF).requires_grad_(true);        // no grad on rank 0
  if (r == 1) b.mutable_grad() = at::tensor({10.f, 20.f, 30.f, 40.f});
  at::Tensor c = at::zeros({2}, kD).requires_grad_(true);        // a second dtype group
  c.mutable_grad() = r == 0 ? at::tensor({0.5, 1.5}, kD) : at::tensor({2.0, 3.0}, kD);
  at::Tensor d = at::zeros({3}, kF).requires_grad_(true);        // no grad anywhere
  at::Tensor e = at::zeros({2, 3}, kF).requires_grad_(true);     // a non-contiguous grad
  e.mutable_grad() = (at::arange(6, kF).view({3, 2}) * (r + 1)).t();
  ASSERT_FALSE(e.grad().is_contiguous());

  dp.sum_gradients({a, b, c, d, e});

  EXPECT_TRUE(at::equal(a.grad(), at::tensor({0.f, 3.f, 6.f, 9.f, 12.f, 15.f}).view({2, 3}))) << a.grad();
  ASSERT_TRUE(b.grad().defined());
  EXPECT_TRUE(at::equal(b.grad(), at::tensor({10.f, 20.f, 30.f, 40.f}))) << b.grad();
  EXPECT_TRUE(at::equal(c.grad(), at::tensor({2.5, 4.5}, kD))) << c.grad();
  ASSERT_TRUE(d.grad().defined());
  EXPECT_TRUE(at::equal(d.grad(), at::zeros({3}, kF))) << d.grad();
  // e.grad = 3 * [[0, 2, 4], [1, 3, 5]]
  EXPECT_TRUE(at::equal(e.grad(), at::tensor({0.f, 6.f, 12.f, 3.f, 9.f, 15.f}).view({2, 3}))) << e.grad();
}

void check_all_gather(st::DataParallel& dp) {
  const int r = dp.rank();
  // rank 0: 2 rows, rank 1: 3 rows -> 5 rows in rank order
  at::Tensor local = r == 0 ? at::tensor({0.f, 1.f, 2.f, 3.f}).view({2, 2})
                            : at::tensor({10.f, 11.f, 12.f, 13.f, 14.f, 15.f}).view({3, 2});
  local.requires_grad_(true);
  at::Tensor all = dp.all_gather(local * 1);  // a non-leaf with a grad_fn
  EXPECT_FALSE(all.requires_grad());
  EXPECT_TRUE(at::equal(all, at::tensor({0.f, 1.f, 2.f, 3.f, 10.f, 11.f, 12.f, 13.f, 14.f, 15.f}).view({5, 2})))
      << all;

  // 1-D int64, rank 0 contributes nothing
  at::Tensor ids = r == 0 ? at::empty({0}, kL) : at::tensor({7, 8, 9}, kL);
  at::Tensor all_ids = dp.all_gather(ids);
  EXPECT_TRUE(at::equal(all_ids, at::tensor({7, 8, 9}, kL))) << all_ids;

  // nobody has rows: an empty [0, 4]
  at::Tensor none = dp.all_gather(at::empty({0, 4}, kF));
  EXPECT_EQ(none.sizes().vec(), (std::vector<int64_t>{0, 4}));

  // 3-D rows
  at::Tensor cube = at::full({r + 1, 2, 2}, static_cast<float>(r), kF);
  at::Tensor all_cube = dp.all_gather(cube);
  ASSERT_EQ(all_cube.sizes().vec(), (std::vector<int64_t>{3, 2, 2}));
  EXPECT_TRUE(at::equal(all_cube[0], at::zeros({2, 2}, kF)));
  EXPECT_TRUE(at::equal(all_cube[2], at::ones({2, 2}, kF)));

  // mismatched trailing shape / dtype: every rank throws (and the group stays usable)
  expect_error([&] { dp.all_gather(at::zeros({1, 2 + r}, kF)); }, "only dim 0 may differ");
  expect_error([&] { dp.all_gather(at::zeros({1, 2}, r == 0 ? kF : kD)); }, "dtype");
}

void check_broadcast(st::DataParallel& dp) {
  const int r = dp.rank();
  at::Tensor w = (at::arange(6, kF).view({2, 3}) + 100 * r).requires_grad_(true);  // a parameter
  at::Tensor ids = at::tensor({1, 2, 3}, kL) * (r + 1);
  at::Tensor base = at::arange(12, kF).view({3, 4}) * (r + 1);
  at::Tensor view = base.t();  // non-contiguous, written through to base
  dp.broadcast({w, ids, view});
  EXPECT_TRUE(at::equal(w, at::arange(6, kF).view({2, 3}))) << w;
  EXPECT_TRUE(w.requires_grad());
  EXPECT_TRUE(at::equal(ids, at::tensor({1, 2, 3}, kL))) << ids;
  EXPECT_TRUE(at::equal(base, at::arange(12, kF).view({3, 4}))) << base;

  // different lists on the two ranks: every rank throws before any data moves
  std::vector<at::Tensor> list{at::zeros({2}, kF)};
  if (r == 1) list.push_back(at::zeros({1}, kF));
  expect_error([&] { dp.broadcast(list); }, "broadcast: rank 1 passed 2 tensors");
}

void run_collective_checks(st::DataParallel& dp) {
  ASSERT_TRUE(dp.active());
  ASSERT_EQ(dp.world_size(), 2);
  EXPECT_DOUBLE_EQ(dp.sum(dp.rank() + 0.25), 1.5);  // 0.25 + 1.25
  check_sum_gradients(dp);
  check_all_gather(dp);
  check_broadcast(dp);
  dp.barrier();
  EXPECT_DOUBLE_EQ(dp.sum(1.0), 2.0);  // still in step after the rejected calls
}

/// This process's argv, as the kernel recorded it (gtest_main does not hand argv to tests).
std::vector<std::string> own_args() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::vector<std::string> args;
  std::string a;
  while (std::getline(in, a, '\0')) args.push_back(a);
  return args;
}

// ---- the parent side: start copies of this binary, wait with a deadline -----------------------

/// What a worker prints when its checks ran and passed.
std::string worker_passed_line(const std::string& mode) { return "sieve-test-worker passed: " + mode; }

/// How many times a worker's pass line appears in `log`.
size_t workers_passed(const std::string& log, const std::string& mode) {
  size_t n = 0;
  const std::string line = worker_passed_line(mode) + "\n";
  for (size_t at = log.find(line); at != std::string::npos; at = log.find(line, at + 1)) ++n;
  return n;
}

struct Spawned {
  pid_t pid = -1;
  std::string log;
};

/// Starts this binary in worker `mode` with `extra` environment, stdout+stderr into `log`.
Spawned spawn_self(const std::string& mode, const std::vector<std::string>& extra, const std::string& log) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string kv(*e);
    // No SIEVE_* from this process; no GTEST_* (sharding, XML output) either.
    if (kv.rfind("SIEVE_", 0) == 0 || kv.rfind("GTEST_", 0) == 0) continue;
    env.push_back(kv);
  }
  env.push_back(std::string(kModeEnv) + "=" + mode);
  for (const std::string& kv : extra) env.push_back(kv);
  std::vector<std::string> args{"test_distributed", "--gtest_filter=DistributedWorker.Run"};
  std::vector<char*> envp, argv;
  for (std::string& s : env) envp.push_back(s.data());
  envp.push_back(nullptr);
  for (std::string& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);

  Spawned s;
  s.log = log;
  const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return s;
  s.pid = ::fork();
  if (s.pid == 0) {
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    ::execve("/proc/self/exe", argv.data(), envp.data());
    ::_exit(127);
  }
  ::close(fd);
  return s;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

/// Exit status of `s`; SIGKILLs it and returns -1 after `seconds`.
int wait_for(const Spawned& s, double seconds) {
  if (s.pid <= 0) return -2;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  for (;;) {
    int status = 0;
    const pid_t got = ::waitpid(s.pid, &status, WNOHANG);
    if (got == s.pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (got < 0) return -3;
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(s.pid, SIGKILL);
      ::waitpid(s.pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

/// Runs both ranks of `mode` with a rendezvous through `store`; asserts both exit 0.
void run_two_ranks(const std::string& mode, const std::string& store, const std::string& dir, double timeout_s) {
  std::vector<Spawned> ranks;
  for (int r = 0; r < 2; ++r)
    ranks.push_back(spawn_self(mode,
                               {"SIEVE_RANK=" + std::to_string(r), "SIEVE_WORLD_SIZE=2", "SIEVE_DIST_STORE=" + store,
                                "SIEVE_DIST_TIMEOUT=" + std::to_string(timeout_s)},
                               dir + "/rank" + std::to_string(r) + ".log"));
  for (int r = 0; r < 2; ++r) {
    const int code = wait_for(ranks[r], 60);
    const std::string log = slurp(ranks[r].log);
    EXPECT_EQ(code, 0) << "rank " << r << " of mode " << mode << " failed; its output:\n" << log;
    EXPECT_EQ(workers_passed(log, mode), 1u) << "rank " << r << " of mode " << mode << " did not run its checks; its output:\n" << log;
  }
}

int free_tcp_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  int port = -1;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0)
    port = ntohs(addr.sin_port);
  ::close(fd);
  return port;
}

/// Sets (or with nullptr unsets) an environment variable for the scope, restoring it afterwards.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    const char* old = std::getenv(name);
    had_ = old != nullptr;
    if (had_) old_ = old;
    if (value != nullptr)
      ::setenv(name, value, 1);
    else
      ::unsetenv(name);
  }
  ~ScopedEnv() {
    if (had_)
      ::setenv(name_.c_str(), old_.c_str(), 1);
    else
      ::unsetenv(name_.c_str());
  }

 private:
  std::string name_, old_;
  bool had_ = false;
};

}  // namespace

// ---- worker mode: one rank (run only by the tests below, in a child process) ------------------

void run_worker(const std::string& mode) {

  if (mode == "collectives") {
    st::DistOptions opts = st::dist_options_from_env();
    ASSERT_EQ(opts.world_size, 2);
    st::DataParallel dp(opts);
    EXPECT_EQ(dp.rank(), opts.rank);
    run_collective_checks(dp);
  } else if (mode == "launch") {
    // What a training command does: the first process spawns the others and is rank 0.
    st::DistOptions opts = st::dist_options_from_env();
    std::vector<int> workers;
    std::vector<std::string> args = own_args();
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    if (opts.world_size == 1) {
      workers = st::spawn_local_workers(2, argv.data());
      ASSERT_EQ(workers.size(), 1u);
      opts = st::dist_options_from_env();
      ASSERT_EQ(opts.rank, 0);
      EXPECT_EQ(opts.store.rfind("file:", 0), 0u) << opts.store;
    }
    ASSERT_EQ(opts.world_size, 2);
    try {
      st::DataParallel dp(opts);
      run_collective_checks(dp);
    } catch (...) {
      st::kill_workers(workers);
      throw;
    }
    EXPECT_EQ(st::wait_workers(workers), 0) << "the spawned rank 1 failed";
  } else if (mode == "peer_dies") {
    // Rank 1 disappears after the rendezvous; rank 0's next collective must throw, not hang.
    st::DistOptions opts = st::dist_options_from_env();
    const auto t0 = std::chrono::steady_clock::now();
    const std::string err = error_of([&] {
      st::DataParallel dp(opts);
      if (dp.rank() == 1) {  // it got this far: that is all rank 1 has to show
        std::cout << worker_passed_line(mode) << std::endl;
        std::_Exit(0);
      }
      dp.sum(1.0);
      dp.barrier();
    });
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_NE(err, "") << "no sieve::Error after the peer died";
    EXPECT_NE(err.find("data-parallel"), std::string::npos) << err;
    EXPECT_LT(took, opts.timeout_s + 5) << err;
    std::cerr << "rank 0 saw: " << err << "\n";
  } else {
    FAIL() << "unknown " << kModeEnv << " '" << mode << "'";
  }
}

// The worker is a helper process, not a test: DistributedWorker.Run exists only in a process
// started with SIEVE_TEST_DIST_MODE set, so ctest's listing (and a plain run) never sees it.
class WorkerRun : public ::testing::Test {
 public:
  explicit WorkerRun(std::string mode) : mode_(std::move(mode)) {}
  void TestBody() override {
    run_worker(mode_);
    // The parent reads this line: an exit status of 0 alone would also come from a filter that
    // matched no test, or a worker that never reached its checks.
    if (!HasFailure()) std::cout << worker_passed_line(mode_) << std::endl;
  }

 private:
  std::string mode_;
};

const bool kWorkerRegistered = [] {
  const char* mode = std::getenv(kModeEnv);
  if (mode == nullptr) return false;
  ::testing::RegisterTest("DistributedWorker", "Run", nullptr, nullptr, __FILE__, __LINE__,
                          [m = std::string(mode)]() -> ::testing::Test* { return new WorkerRun(m); });
  return true;
}();

// ---- the tests ---------------------------------------------------------------------------------

// ctest lists what the binary lists: the worker must not show up there as a (skipped) test.
TEST(Distributed, WorkerIsNoTestOfItsOwn) {
  ASSERT_EQ(std::getenv(kModeEnv), nullptr);
  EXPECT_FALSE(kWorkerRegistered);
  const ::testing::UnitTest& all = *::testing::UnitTest::GetInstance();
  for (int i = 0; i < all.total_test_suite_count(); ++i)
    EXPECT_STRNE(all.GetTestSuite(i)->name(), "DistributedWorker");
}

TEST(Distributed, WorldSizeOneIsANoOp) {
  st::DataParallel dp(st::DistOptions{});
  EXPECT_FALSE(dp.active());
  EXPECT_EQ(dp.rank(), 0);
  EXPECT_EQ(dp.world_size(), 1);

  at::Tensor a = at::zeros({3}, kF).requires_grad_(true);
  a.mutable_grad() = at::tensor({1.f, 2.f, 3.f});
  const void* data = a.grad().data_ptr();
  at::Tensor b = at::zeros({2}, kF).requires_grad_(true);
  dp.sum_gradients({a, b});
  EXPECT_TRUE(at::equal(a.grad(), at::tensor({1.f, 2.f, 3.f})));
  EXPECT_EQ(a.grad().data_ptr(), data);
  EXPECT_FALSE(b.grad().defined());

  at::Tensor local = at::arange(4, kF).view({2, 2}).requires_grad_(true);
  at::Tensor all = dp.all_gather(local);
  EXPECT_TRUE(at::equal(all, local));
  EXPECT_FALSE(all.requires_grad());

  at::Tensor w = at::tensor({5.f, 6.f});
  dp.broadcast({w});
  EXPECT_TRUE(at::equal(w, at::tensor({5.f, 6.f})));
  EXPECT_DOUBLE_EQ(dp.sum(2.5), 2.5);
  dp.barrier();
}

TEST(Distributed, BadOptionsThrow) {
  auto make = [](int world, int rank, std::string store, double timeout = 5) {
    st::DistOptions o;
    o.world_size = world;
    o.rank = rank;
    o.store = std::move(store);
    o.timeout_s = timeout;
    return [o] { st::DataParallel dp(o); };
  };
  expect_error(make(2, 2, "file:/tmp/x"), "DistOptions.rank must be in 0..1");
  expect_error(make(2, -1, "file:/tmp/x"), "DistOptions.rank");
  expect_error(make(1, 1, ""), "DistOptions.rank");
  expect_error(make(0, 0, "file:/tmp/x"), "DistOptions.world_size must be >= 1");
  expect_error(make(2, 0, ""), "DistOptions.store is empty");
  expect_error(make(2, 0, "udp:host:1"), "unknown DistOptions.store scheme");
  expect_error(make(2, 0, "/tmp/no-scheme"), "unknown DistOptions.store scheme");
  expect_error(make(2, 0, "file:"), "names no file");
  expect_error(make(2, 0, "tcp:localhost"), "needs a host and a port");
  expect_error(make(2, 0, "tcp::29500"), "needs a host and a port");
  expect_error(make(2, 0, "tcp:localhost:http"), "is not a number in 1..65535");
  expect_error(make(2, 0, "tcp:localhost:70000"), "is not a number in 1..65535");
  expect_error(make(2, 0, "file:/tmp/x", 0), "timeout_s must be a positive");
  expect_error(make(1, 0, "bogus"), "unknown DistOptions.store scheme");  // checked even when unused
  expect_error(make(2, 0, "file:/nonexistent-dir/sub/store"), "the directory /nonexistent-dir/sub of the rendezvous");
  // A rendezvous that cannot complete (rank 1 never comes) is a sieve::Error after the timeout.
  const std::string dir = sieve::test::make_temp_dir("dist_alone");
  const std::string err = error_of(make(2, 0, "file:" + dir + "/store", 0.3));
  EXPECT_NE(err.find("data-parallel rendezvous of rank 0 of 2 through 'file:" + dir + "/store' failed"),
            std::string::npos)
      << err;
  std::cerr << "[ info ] lonely rank 0: " << err.substr(0, 300) << "\n";
}

TEST(Distributed, OptionsFromEnvironment) {
  {
    ScopedEnv r("SIEVE_RANK", nullptr), w("SIEVE_WORLD_SIZE", nullptr), s("SIEVE_DIST_STORE", nullptr),
        t("SIEVE_DIST_TIMEOUT", nullptr);
    st::DistOptions o = st::dist_options_from_env();
    EXPECT_EQ(o.world_size, 1);
    EXPECT_EQ(o.rank, 0);
    EXPECT_EQ(o.store, "");
    EXPECT_EQ(o.timeout_s, 300);
  }
  {
    ScopedEnv r("SIEVE_RANK", "1"), w("SIEVE_WORLD_SIZE", "3"), s("SIEVE_DIST_STORE", "tcp:127.0.0.1:1234"),
        t("SIEVE_DIST_TIMEOUT", "7.5");
    st::DistOptions o = st::dist_options_from_env();
    EXPECT_EQ(o.world_size, 3);
    EXPECT_EQ(o.rank, 1);
    EXPECT_EQ(o.store, "tcp:127.0.0.1:1234");
    EXPECT_EQ(o.timeout_s, 7.5);
  }
  {
    ScopedEnv r("SIEVE_RANK", "1"), w("SIEVE_WORLD_SIZE", nullptr), s("SIEVE_DIST_STORE", nullptr);
    expect_error([] { st::dist_options_from_env(); }, "missing: SIEVE_WORLD_SIZE SIEVE_DIST_STORE");
  }
  {
    ScopedEnv r("SIEVE_RANK", "one"), w("SIEVE_WORLD_SIZE", "2"), s("SIEVE_DIST_STORE", "file:/tmp/x");
    expect_error([] { st::dist_options_from_env(); }, "SIEVE_RANK='one' is not an integer");
  }
  {
    ScopedEnv t("SIEVE_DIST_TIMEOUT", "soon");
    expect_error([] { st::dist_options_from_env(); }, "SIEVE_DIST_TIMEOUT");
  }
}

TEST(Distributed, WaitWorkersReturnsFirstFailure) {
  std::vector<int> pids;
  for (int code : {0, 3, 5}) {
    const pid_t pid = ::fork();
    if (pid == 0) ::_exit(code);  // the child does nothing but exit
    ASSERT_GT(pid, 0);
    pids.push_back(pid);
  }
  EXPECT_EQ(st::wait_workers(pids), 3);

  const pid_t killed = ::fork();
  if (killed == 0) {
    ::pause();
    ::_exit(0);
  }
  ASSERT_GT(killed, 0);
  ::kill(killed, SIGKILL);
  EXPECT_EQ(st::wait_workers({killed}), 128 + SIGKILL);
  EXPECT_EQ(st::wait_workers({}), 0);
  expect_error([&] { st::wait_workers({killed}); }, "already reaped");
}

TEST(Distributed, KillWorkersTerminatesAndReaps) {
  std::vector<int> pids;
  for (int i = 0; i < 2; ++i) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      for (;;) ::pause();
    }
    ASSERT_GT(pid, 0);
    pids.push_back(pid);
  }
  const auto t0 = std::chrono::steady_clock::now();
  st::kill_workers(pids);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 3.0);
  for (int pid : pids) {
    int status = 0;
    EXPECT_EQ(::waitpid(pid, &status, WNOHANG), -1) << "pid " << pid << " was not reaped";
  }
  st::kill_workers(pids);  // already gone: harmless
}

TEST(Distributed, SpawnLocalWorkersRejectsBadCalls) {
  char arg0[] = "prog";
  char* argv[] = {arg0, nullptr};
  expect_error([&] { st::spawn_local_workers(0, argv); }, "world_size must be >= 1");
  expect_error([&] { st::spawn_local_workers(2, nullptr); }, "argv is empty");
  {
    ScopedEnv r("SIEVE_RANK", "1");
    expect_error([&] { st::spawn_local_workers(2, argv); }, "already data-parallel worker 1");
  }
  ScopedEnv r("SIEVE_RANK", nullptr);
  EXPECT_TRUE(st::spawn_local_workers(1, argv).empty());
  EXPECT_EQ(std::getenv("SIEVE_RANK"), nullptr);
}

TEST(Distributed, TwoRanksThroughFileStore) {
  const std::string dir = sieve::test::make_temp_dir("dist_file");
  run_two_ranks("collectives", "file:" + dir + "/store", dir, 10);
}

TEST(Distributed, TwoRanksThroughTcpStore) {
  const std::string dir = sieve::test::make_temp_dir("dist_tcp");
  const int port = free_tcp_port();
  ASSERT_GT(port, 0);
  run_two_ranks("collectives", "tcp:127.0.0.1:" + std::to_string(port), dir, 10);
}

TEST(Distributed, SpawnLocalWorkersRunsTheGroup) {
  const std::string dir = sieve::test::make_temp_dir("dist_spawn");
  // One launcher; it spawns rank 1 itself through spawn_local_workers.
  Spawned launcher = spawn_self("launch", {"SIEVE_DIST_TIMEOUT=10", "TMPDIR=" + dir}, dir + "/launcher.log");
  const int code = wait_for(launcher, 60);
  const std::string log = slurp(launcher.log);
  EXPECT_EQ(code, 0) << "launcher output:\n" << log;
  // Rank 1 writes to the launcher's output: both ranks ran their checks.
  EXPECT_EQ(workers_passed(log, "launch"), 2u) << "launcher output:\n" << log;
  // The rendezvous file spawn_local_workers made in TMPDIR was deleted by the last FileStore.
  const auto listing = sieve::test::run_command("ls " + dir);
  EXPECT_EQ(listing.out.find("sieve_dist_"), std::string::npos) << listing.out;
}

TEST(Distributed, DeadPeerThrowsInsteadOfHanging) {
  const std::string dir = sieve::test::make_temp_dir("dist_dead");
  run_two_ranks("peer_dies", "file:" + dir + "/store", dir, 3);
}
