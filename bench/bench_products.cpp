// The machine's measured ceilings for the encoder's roofline (docs/benchmarks.md, issue 44), and
// why PackedLinear fixes the row count of its products: oneDNN's matmul (the library sieve links)
// on all-MiniLM-L6-v2's dense shapes, fp32 / bf16 / int8 (u8 x s8 -> s32), with a run-time row
// count and with a fixed one, the weights warm (one copy, in cache) or cold (enough copies in
// turn to pass a few MB of cache); and bandwidth (a copy and a read of 32 MB and of 512 MB).
// One thread unless OMP_NUM_THREADS says otherwise. JSON lines on stdout. Run:
//   OMP_NUM_THREADS=1 build/bench/bench_products [--quick]
#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

using dnnl::memory;
using Dt = memory::data_type;
using Tag = memory::format_tag;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Bytes a second of a large memcpy (read + write counted) and of a large sum (read only).
void bandwidth(size_t bytes) {
  std::vector<float> a(bytes / sizeof(float), 1.0f), b(bytes / sizeof(float));
  std::memcpy(b.data(), a.data(), bytes);  // touch every page first
  double best_copy = 0, best_read = 0;
  volatile float sink = 0;
  for (int r = 0; r < 5; ++r) {
    auto t0 = Clock::now();
    std::memcpy(b.data(), a.data(), bytes);
    best_copy = std::max(best_copy, 2.0 * static_cast<double>(bytes) / seconds_since(t0));
    // Integer sums (associative, so the compiler vectorises them): the read is the bound.
    const auto* words = reinterpret_cast<const uint32_t*>(a.data());
    t0 = Clock::now();
    uint32_t sum = 0;
    for (size_t i = 0; i < a.size(); ++i) sum += words[i];
    sink = static_cast<float>(sum);
    best_read = std::max(best_read, static_cast<double>(bytes) / seconds_since(t0));
  }
  (void)sink;
  std::printf("{\"case\": \"bandwidth\", \"bytes\": %zu, \"copy_gb_s\": %.2f, \"read_gb_s\": %.2f}\n", bytes,
              best_copy / 1e9, best_read / 1e9);
}

void product(const dnnl::engine& eng, const char* name, Dt src_t, Dt wei_t, Dt dst_t, long M, long K, long N,
             bool runtime_rows, int copies, double budget_s) {
  const memory::dim Md = runtime_rows ? DNNL_RUNTIME_DIM_VAL : M;
  memory::desc src({Md, K}, src_t, Tag::ab), wei({K, N}, wei_t, Tag::any), dst({Md, N}, dst_t, Tag::ab);
  dnnl::matmul::primitive_desc pd;
  try {
    pd = dnnl::matmul::primitive_desc(dnnl::matmul::desc(src, wei, dst), eng);
  } catch (const dnnl::error&) {
    std::printf("{\"case\": \"product\", \"type\": \"%s\", \"rows\": %ld, \"k\": %ld, \"n\": %ld, \"runtime_rows\": %s, "
                "\"unsupported\": true}\n", name, M, K, N, runtime_rows ? "true" : "false");
    return;
  }
  std::vector<memory> weights;
  for (int c = 0; c < copies; ++c) {
    weights.emplace_back(pd.weights_desc(), eng);
    std::memset(weights.back().get_data_handle(), 1, pd.weights_desc().get_size());
  }
  memory a({{M, K}, src_t, Tag::ab}, eng), c({{M, N}, dst_t, Tag::ab}, eng);
  std::memset(a.get_data_handle(), 0, a.get_desc().get_size());
  dnnl::matmul mm(pd);
  dnnl::stream s(eng);
  auto run = [&](int i) {
    mm.execute(s, {{DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, weights[static_cast<size_t>(i % copies)]}, {DNNL_ARG_DST, c}});
  };
  for (int i = 0; i < copies + 3; ++i) run(i);
  s.wait();
  int calls = 0;
  const auto t0 = Clock::now();
  while (calls < 5 || seconds_since(t0) < budget_s) {
    run(calls++);
    if (calls % 16 == 0) s.wait();
  }
  s.wait();
  const double us = seconds_since(t0) / calls * 1e6;
  std::printf("{\"case\": \"product\", \"type\": \"%s\", \"rows\": %ld, \"k\": %ld, \"n\": %ld, \"runtime_rows\": %s, "
              "\"weights\": \"%s\", \"kernel\": \"%s\", \"us\": %.2f, \"gflop_s\": %.1f, \"weight_gb_s\": %.2f}\n",
              name, M, K, N, runtime_rows ? "true" : "false", copies > 1 ? "cold" : "warm", pd.impl_info_str(), us,
              2.0 * M * K * N / us / 1e3, static_cast<double>(pd.weights_desc().get_size()) / us / 1e3);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--quick") {
      quick = true;
    } else {
      std::fprintf(stderr, "usage: bench_products [--quick]\n  oneDNN products on MiniLM's shapes and memory bandwidth; JSON lines\n");
      return a == "--help" || a == "-h" ? 0 : 2;
    }
  }
  const dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  std::printf("{\"case\": \"machine\", \"onednn\": \"%d.%d.%d\", \"isa\": %d}\n", dnnl_version()->major,
              dnnl_version()->minor, dnnl_version()->patch, static_cast<int>(dnnl::get_effective_cpu_isa()));
  bandwidth(size_t{32} << 20);   // fits a large last-level cache (this machine's: 480 MB)
  bandwidth(size_t{512} << 20);  // memory
  const double budget = quick ? 0.05 : 0.3;
  struct Type {
    const char* name;
    Dt src, wei, dst;
  };
  const Type types[] = {{"fp32", Dt::f32, Dt::f32, Dt::f32}, {"bf16", Dt::bf16, Dt::bf16, Dt::f32},
                        {"int8", Dt::u8, Dt::s8, Dt::s32}};
  const long shapes[][2] = {{384, 1152}, {384, 1536}, {1536, 384}};
  for (long M : {1L, 3L, 32L, 512L, 4096L})
    for (const auto& sh : shapes)
      for (const Type& t : types)
        for (bool rt : {true, false}) {
          product(eng, t.name, t.src, t.wei, t.dst, M, sh[0], sh[1], rt, 1, budget);
          // Cold weights: 64 copies of 1.2-2.4 MB pass any last-level cache here (weights streamed).
          if (M <= 32 && !quick) product(eng, t.name, t.src, t.wei, t.dst, M, sh[0], sh[1], rt, 64, budget);
        }
  return 0;
}
