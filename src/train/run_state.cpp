#include "train/run_state.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/optim/adamw.h>
#include <torch/serialize.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <sstream>

#include "core/file_util.h"
#include "model/tensor_io.h"
#include "sieve/error.h"
#include "train/trainable_encoder.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace sieve::train {

namespace fs = std::filesystem;

namespace {

// Step of a "checkpoint-<step>" directory name, or -1.
long long checkpoint_step(const fs::path& p) {
  const std::string name = p.filename().string();
  const std::string prefix = "checkpoint-";
  if (name.rfind(prefix, 0) != 0 || name.size() == prefix.size()) return -1;
  for (size_t i = prefix.size(); i < name.size(); ++i)
    if (!std::isdigit(static_cast<unsigned char>(name[i]))) return -1;
  return std::stoll(name.substr(prefix.size()));
}

}  // namespace

bool any_checkpoint(const std::string& out_dir) {
  std::error_code ec;
  if (!fs::is_directory(out_dir, ec)) return false;
  for (const auto& e : fs::directory_iterator(out_dir))
    if (checkpoint_step(e.path()) >= 0 && fs::is_regular_file(e.path() / "trainer_state.json")) return true;
  return false;
}

void check_common(const TrainCommon& c) {
  SIEVE_THROW_IF_NOT(!c.out_dir.empty(), "an output directory is required (--out)");
  SIEVE_THROW_IF_NOT(c.steps > 0, "--steps must be positive");
  SIEVE_THROW_IF_NOT(c.seconds >= 0, "--seconds must not be negative");
  SIEVE_THROW_IF_NOT(c.batch_size >= 2, "--batch-size must be at least 2 (in-batch negatives need company)");
  SIEVE_THROW_IF_NOT(c.warmup_ratio >= 0 && c.warmup_ratio <= 1, "--warmup must lie in [0, 1]");
  SIEVE_THROW_IF_NOT(c.log_every > 0, "--log-every must be positive");
  SIEVE_THROW_IF_NOT(c.world_size >= 1 && c.rank >= 0 && c.rank < c.world_size,
                     "rank " << c.rank << " is outside a world of " << c.world_size);
  SIEVE_THROW_IF_NOT(c.world_size == 1 || static_cast<int>(c.batch_size) >= c.world_size,
                     "--batch-size " << c.batch_size << " cannot be shared by " << c.world_size << " processes");
}

static void keep_freed_memory() {
#if defined(__GLIBC__)
  // Training allocates and frees the same large activations every step. glibc's defaults hand
  // blocks over 128 KiB back to the kernel (mmap / trim), so each step faults in and zeroes them
  // again: a third of a step's time on two cores (sys time, clear_page). Keeping them mapped
  // cost a few hundred MB of resident memory and took 4 steps of all-MiniLM-L6-v2 from 89 to 61 s.
  static const bool done = [] {
    mallopt(M_MMAP_THRESHOLD, 32 << 20);  // glibc's upper limit
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
    mallopt(M_TOP_PAD, 256 << 20);
    return true;
  }();
  (void)done;
#endif
}

RunDir::RunDir(const TrainCommon& common, const std::string& kind)
    : out_(common.out_dir), kind_(kind), writer_(common.rank == 0) {
  keep_freed_memory();
  if (fs::exists(out_)) SIEVE_THROW_IF_NOT(fs::is_directory(out_), "'" << out_ << "' exists and is not a directory");
  if (writer_) fs::create_directories(out_);
  if (common.resume) {
    long long best = -1;
    for (const auto& e : fs::directory_iterator(out_)) {
      long long s = checkpoint_step(e.path());
      if (s > best && fs::is_regular_file(e.path() / "trainer_state.json")) {
        best = s;
        resume_from_ = e.path().string();
      }
    }
    SIEVE_THROW_IF_NOT(!resume_from_.empty(), "--resume: no checkpoint in '" << out_ << "'");
  }
  if (!writer_) return;
  metrics_.open(path_join(out_, "metrics.jsonl"), std::ios::app);
  SIEVE_THROW_IF_NOT(metrics_.is_open(), "cannot write '" << path_join(out_, "metrics.jsonl") << "'");
}

void RunDir::log(const nlohmann::json& line) {
  if (!writer_) return;
  metrics_ << line.dump() << "\n";
  metrics_.flush();
  SIEVE_THROW_IF_NOT(metrics_.good(), "cannot write '" << path_join(out_, "metrics.jsonl") << "' (disk full?)");
}

void RunDir::checkpoint(const LoopState& state, torch::optim::Optimizer& opt,
                        const std::function<void(const std::string& dir)>& write_model) {
  if (!writer_) return;
  const std::string dir = path_join(out_, "checkpoint-" + std::to_string(state.step));
  const std::string staged = dir + ".partial";
  std::error_code ec;
  fs::remove_all(staged, ec);
  fs::create_directories(staged);
  write_model(staged);
  // Serialised in memory, then written by sieve: libtorch's file writer fails inside a destructor
  // on a full disk or a file-size limit (std::terminate); ours reports the file and its errno.
  std::ostringstream optimizer;
  torch::save(opt, optimizer);
  write_file_atomic(path_join(staged, "optimizer.pt"), optimizer.str());
  at::Tensor rng = at::detail::getDefaultCPUGenerator().get_state();
  write_file_atomic(path_join(staged, "rng.bin"),
                    std::string(reinterpret_cast<const char*>(rng.data_ptr<uint8_t>()), static_cast<size_t>(rng.numel())));
  nlohmann::json j = {{"kind", kind_},           {"step", state.step},       {"best_metric", state.best_metric},
                      {"best_step", state.best_step}, {"sampler", state.sampler}, {"extra", state.extra}};
  write_file_atomic(path_join(staged, "trainer_state.json"), j.dump(2) + "\n");
  replace_dir(staged, dir);
  // Only the newest checkpoint is kept.
  for (const auto& e : fs::directory_iterator(out_)) {
    long long s = checkpoint_step(e.path());
    if (s >= 0 && static_cast<size_t>(s) != state.step) fs::remove_all(e.path(), ec);
  }
}

void RunDir::checkpoint_if_due(size_t save_every, LoopState& state, const std::function<std::string()>& sampler,
                               torch::optim::Optimizer& opt,
                               const std::function<void(const std::string& dir)>& write_model) {
  if (save_every == 0 || state.step % save_every != 0) return;
  state.sampler = sampler();
  checkpoint(state, opt, write_model);
}

LoopState RunDir::restore(torch::optim::Optimizer& opt) const {
  SIEVE_ASSERT(!resume_from_.empty());
  auto j = nlohmann::json::parse(read_file(path_join(resume_from_, "trainer_state.json")), nullptr, false);
  SIEVE_THROW_IF_NOT(!j.is_discarded() && j.value("kind", "") == kind_,
                     "'" << resume_from_ << "' is not a checkpoint of a " << kind_ << " run");
  LoopState s;
  s.step = j.at("step").get<size_t>();
  s.best_metric = j.at("best_metric").get<double>();
  s.best_step = j.at("best_step").get<size_t>();
  s.sampler = j.at("sampler").get<std::string>();
  s.extra = j.value("extra", nlohmann::json::object());
  torch::load(opt, path_join(resume_from_, "optimizer.pt"));
  std::string rng = read_file(path_join(resume_from_, "rng.bin"));
  at::Tensor t = at::empty({static_cast<int64_t>(rng.size())}, at::kByte);
  std::memcpy(t.data_ptr<uint8_t>(), rng.data(), rng.size());
  at::Generator gen = at::detail::getDefaultCPUGenerator();
  gen.set_state(t);
  return s;
}

void StepLog::add(size_t step, size_t rows, double loss, const nlohmann::json& averaged, const nlohmann::json& extra) {
  SIEVE_THROW_IF_NOT(std::isfinite(loss), "the loss became " << loss << " at step " << step << "; lower the learning rate");
  samples_ += rows;
  loss_ += loss;
  ++n_;
  for (const auto& [k, v] : averaged.items()) sums_[k] = sums_.value(k, 0.0) + v.get<double>();
  if (step % c_.log_every != 0 && !budget_.done(step)) return;
  const double mean = loss_ / static_cast<double>(n_);
  if (first_) report_.first_loss = mean;
  first_ = false;
  report_.last_loss = mean;
  nlohmann::json line = {{"step", step}, {"loss", mean}};
  for (const auto& [k, v] : sums_.items()) line[k] = v.get<double>() / static_cast<double>(n_);
  for (const auto& [k, v] : extra.items()) line[k] = v;
  line["samples_per_second"] = samples_per_second();
  line["elapsed_s"] = budget_.elapsed();
  run_.log(line);
  loss_ = 0;
  n_ = 0;
  sums_ = nlohmann::json::object();
}

void dump_gradients(const RunDir& run, const TrainCommon& c, size_t step,
                    const std::vector<std::pair<std::string, torch::OrderedDict<std::string, at::Tensor>>>& named) {
  if (c.gradients_file.empty() || step != 0 || !run.writer()) return;
  std::vector<std::pair<std::string, at::Tensor>> grads;
  for (const auto& [prefix, dict] : named)
    for (const auto& p : dict)
      if (p.value().grad().defined()) grads.emplace_back(prefix + p.key(), p.value().grad());
  write_tensors(c.gradients_file, grads);
}

void write_report(const RunDir& run, const TrainReport& r, const nlohmann::json& extra) {
  if (!run.writer()) return;
  nlohmann::json j = {{"steps", r.steps},         {"seconds", r.seconds},     {"samples_per_second", r.samples_per_second},
                      {"first_loss", r.first_loss}, {"last_loss", r.last_loss}, {"final", r.final_dir}};
  for (const auto& [k, v] : extra.items()) j[k] = v;
  write_file_atomic(path_join(run.out(), "report.json"), j.dump(2) + "\n");
}

void set_learning_rates(torch::optim::Optimizer& opt, const std::vector<double>& base, double factor) {
  auto& groups = opt.param_groups();
  SIEVE_ASSERT(groups.size() == base.size());
  for (size_t g = 0; g < groups.size(); ++g) groups[g].options().set_lr(base[g] * factor);
}

}  // namespace sieve::train

namespace sieve::train {

void add_adamw_groups(const torch::OrderedDict<std::string, at::Tensor>& named, double lr, double weight_decay,
                      std::vector<torch::optim::OptimizerParamGroup>& groups, std::vector<double>& base_lr) {
  std::vector<at::Tensor> decay, no_decay;
  for (const auto& p : named) {
    if (!p.value().requires_grad()) continue;
    const std::string& n = p.key();
    bool plain = n.find("bias") != std::string::npos || n.find("LayerNorm") != std::string::npos ||
                 n.find("norm") != std::string::npos;
    (plain ? no_decay : decay).push_back(p.value());
  }
  for (auto* list : {&decay, &no_decay}) {
    if (list->empty()) continue;
    auto opt = std::make_unique<torch::optim::AdamWOptions>(lr);
    opt->weight_decay(list == &decay ? weight_decay : 0.0);
    groups.emplace_back(*list, std::move(opt));
    base_lr.push_back(lr);
  }
}

}  // namespace sieve::train

namespace sieve {
bool has_checkpoint(const std::string& out_dir) { return train::any_checkpoint(out_dir); }
}  // namespace sieve
