#include "core/log.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>

namespace sieve {
namespace {

LogLevel initial_level() {
  const char* env = std::getenv("SIEVE_LOG");
  LogLevel level = LogLevel::Info;
  if (env != nullptr) log_level_from_name(env, &level);  // an unknown name keeps Info
  return level;
}

LogLevel g_level = initial_level();
std::mutex g_mu;

void emit(LogLevel level, const char* tag, const std::string& msg) {
  if (static_cast<int>(level) > static_cast<int>(g_level)) return;
  std::lock_guard<std::mutex> lock(g_mu);
  std::fprintf(stderr, "sieve: %s%s\n", tag, msg.c_str());
}

}  // namespace

bool log_level_from_name(const std::string& name, LogLevel* level) {
  static const std::pair<const char*, LogLevel> kNames[] = {
      {"quiet", LogLevel::Quiet}, {"warn", LogLevel::Warn}, {"info", LogLevel::Info}, {"debug", LogLevel::Debug}};
  for (const auto& [n, l] : kNames)
    if (name == n) {
      *level = l;
      return true;
    }
  return false;
}

void set_log_level(LogLevel level) { g_level = level; }
LogLevel log_level() { return g_level; }

void log_warn(const std::string& msg) { emit(LogLevel::Warn, "warning: ", msg); }
void log_info(const std::string& msg) { emit(LogLevel::Info, "", msg); }
void log_debug(const std::string& msg) { emit(LogLevel::Debug, "debug: ", msg); }

void log_warn_once(const std::string& key, const std::string& msg) {
  static std::set<std::string> seen;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    if (!seen.insert(key).second) return;
  }
  log_warn(msg);
}

namespace {
double plain_progress_seconds() {
  const char* env = std::getenv("SIEVE_PROGRESS_SECONDS");
  if (env == nullptr) return 30;
  char* end = nullptr;
  const double s = std::strtod(env, &end);
  return end != env && s >= 0 ? s : 30;
}
}  // namespace

Progress::Progress(std::string label, uint64_t total)
    : label_(std::move(label)),
      total_(total),
      enabled_(g_level >= LogLevel::Info),
      tty_(::isatty(STDERR_FILENO) == 1),
      plain_every_(plain_progress_seconds()),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {
  // Without a terminal only counted work reports (a total of 0 is work that asked for no bar).
  if (!tty_ && total_ == 0) enabled_ = false;
}

Progress::~Progress() { finish(); }

void Progress::add(uint64_t n) {
  done_ += n;
  if (!enabled_) return;
  auto now = std::chrono::steady_clock::now();
  const auto every = tty_ ? std::chrono::duration<double>(0.25) : std::chrono::duration<double>(plain_every_);
  if (now - last_draw_ >= every) {
    last_draw_ = now;
    draw(false);
  }
}

void Progress::finish() {
  if (finished_) return;
  finished_ = true;
  if (enabled_ && (tty_ || plain_shown_)) draw(true);
}

void Progress::draw(bool final_line) {
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  double rate = secs > 0 ? static_cast<double>(done_) / secs : 0.0;
  double eta = (rate > 0 && total_ > done_) ? static_cast<double>(total_ - done_) / rate : 0.0;
  std::lock_guard<std::mutex> lock(g_mu);
  if (!tty_) {  // one whole line each time: a log file has no carriage returns to redraw
    plain_shown_ = true;
    std::fprintf(stderr, "sieve: %s: %llu/%llu (%.0f%%)  %.1f/s  %s %.0fs\n", label_.c_str(),
                 static_cast<unsigned long long>(done_), static_cast<unsigned long long>(total_),
                 total_ > 0 ? 100.0 * static_cast<double>(done_) / static_cast<double>(total_) : 0.0, rate,
                 final_line ? "took" : "ETA", final_line ? secs : eta);
    return;
  }
  std::fprintf(stderr, "\r%s: %llu/%llu  %.1f/s  ETA %.0fs%s", label_.c_str(),
               static_cast<unsigned long long>(done_), static_cast<unsigned long long>(total_),
               rate, eta, final_line ? "\n" : "   ");
  std::fflush(stderr);
}

}  // namespace sieve
