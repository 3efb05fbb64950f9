// Data-parallel training primitives over libtorch's c10d (ProcessGroupGloo with a FileStore or a
// TCPStore for the rendezvous). Every rank runs the same program on its own shard of the data and
// calls the same collectives in the same order; c10d does the communication.
//
// Typical use (one machine, N processes):
//   auto opts = sieve::train::dist_options_from_env();
//   std::vector<int> workers;
//   if (opts.world_size == 1 && want > 1) {
//     workers = sieve::train::spawn_local_workers(want, argv);   // this process becomes rank 0
//     opts = sieve::train::dist_options_from_env();
//   }
//   sieve::train::DataParallel dp(opts);
//   ... loss.backward(); dp.sum_gradients(params); (divide by world or scale the loss) opt.step();
//   int rc = sieve::train::wait_workers(workers);          // on an exception: kill_workers(workers)
//
// The c10d headers stay inside distributed.cpp: this header only needs at::Tensor.
#pragma once

#include <ATen/core/Tensor.h>

#include <memory>
#include <string>
#include <vector>

namespace sieve::train {

/// How this process takes part in data-parallel training.
struct DistOptions {
  int world_size = 1;      ///< processes in the group; 1 = no group at all
  int rank = 0;            ///< this process, 0..world_size-1
  /// Rendezvous: "file:/path/to/file" (same machine or shared FS; the file must be new or empty,
  /// its directory must exist, and the last rank to leave deletes it) or "tcp:HOST:PORT" (rank 0
  /// listens there). "file://" and "tcp://" as PyTorch writes them are accepted too.
  std::string store;
  double timeout_s = 300;  ///< collective timeout (also the rendezvous timeout)
};

/// One process's membership in a data-parallel group. All ranks must call the collectives
/// (sum_gradients, all_gather, broadcast, sum, barrier) in the same order with matching shapes.
/// A collective that fails (a peer died, the timeout passed) throws sieve::Error; the group is then
/// unusable and the process should exit.
///
/// Gloo binds to the address of this machine's hostname (loopback when it does not resolve); a
/// "tcp:" store on a loopback host binds to that host; the environment variable GLOO_SOCKET_IFNAME
/// (as in PyTorch) names a network interface to use instead.
class DataParallel {
 public:
  /// world_size 1: no group, every call is a cheap no-op/identity. Validates rank, world size,
  /// store and timeout; throws sieve::Error with a clear message otherwise, and when the rendezvous
  /// with the other ranks fails or times out.
  explicit DataParallel(const DistOptions& o);
  ~DataParallel();
  DataParallel(const DataParallel&) = delete;
  DataParallel& operator=(const DataParallel&) = delete;

  int rank() const;
  int world_size() const;
  bool active() const;  ///< world_size > 1

  /// Sums the .grad() of every tensor in params over all ranks, in place (undefined grads are
  /// treated as zeros and become defined). One flattened all-reduce per (dtype, device) group of
  /// gradients, not one per tensor. With world_size 1, nothing changes (undefined grads stay so).
  void sum_gradients(const std::vector<at::Tensor>& params);

  /// Concatenates `local` ([n_r, ...], n_r may differ per rank, n_r may be 0) from all ranks along
  /// dim 0 in rank order; no autograd (returns a detached tensor on local's device). The trailing
  /// shape and dtype must agree on all ranks (sieve::Error on every rank otherwise); at most 16 dims.
  at::Tensor all_gather(const at::Tensor& local);

  /// Copies rank 0's values of each tensor to every rank (in place, no autograd). The list must
  /// have the same length, shapes and dtypes on all ranks (sieve::Error on every rank otherwise).
  void broadcast(const std::vector<at::Tensor>& tensors);

  /// Scalar all-reduce (sum over ranks), for logging.
  double sum(double v);

  /// Returns when every rank has reached it.
  void barrier();

 private:
  struct Impl;
  int rank_ = 0;
  int world_size_ = 1;
  std::unique_ptr<Impl> impl_;  ///< null when world_size == 1
};

/// Starts `world_size` - 1 more copies of the running program (/proc/self/exe, same argv) with the
/// environment SIEVE_RANK=r, SIEVE_WORLD_SIZE=n, SIEVE_DIST_STORE=file:<a fresh temp file> set;
/// rank 0 is this process, which also gets them via setenv, so each copy (and this process) calls
/// dist_options_from_env(). Returns the child pids (empty for world_size 1). Throws sieve::Error
/// when world_size < 1, when this process is already a worker (SIEVE_RANK is set: protects
/// against a fork bomb), or when a fork fails (the children started so far are killed).
std::vector<int> spawn_local_workers(int world_size, char** argv);

/// Waits for every pid and returns the first non-zero status in `pids` order (0 if all
/// succeeded); a child killed by signal S counts as 128 + S.
int wait_workers(const std::vector<int>& pids);

/// Terminates and reaps the children (SIGTERM, then SIGKILL for those still alive after ~2 s).
/// Safe on pids that already exited; for the error path of the launching process.
void kill_workers(const std::vector<int>& pids);

/// Reads SIEVE_RANK / SIEVE_WORLD_SIZE / SIEVE_DIST_STORE (all absent: world_size 1) and the
/// optional SIEVE_DIST_TIMEOUT (seconds). Throws sieve::Error when only some are set or a number is
/// malformed.
DistOptions dist_options_from_env();

}  // namespace sieve::train
