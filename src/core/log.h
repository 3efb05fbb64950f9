// Logging to stderr and progress reporting for long work.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <utility>

namespace sieve {

enum class LogLevel { Quiet = 0, Warn = 1, Info = 2, Debug = 3 };

/// Process-wide log level (default Info; SIEVE_LOG=quiet|warn|info|debug overrides at start-up).
void set_log_level(LogLevel level);
/// The level named "quiet", "warn", "info" or "debug" into *level; false (unchanged) for another name.
bool log_level_from_name(const std::string& name, LogLevel* level);
LogLevel log_level();

/// Writes "sieve: <msg>" to stderr when the level allows.
void log_warn(const std::string& msg);
void log_info(const std::string& msg);
void log_debug(const std::string& msg);

/// Logs a warning only the first time `key` is seen in this process (e.g. "truncated input").
void log_warn_once(const std::string& key, const std::string& msg);

/// Progress of long work on stderr (items/s and ETA): on a terminal one line redrawn at most 4
/// times a second; otherwise (a log file, CI) a plain line every 30 s (SIEVE_PROGRESS_SECONDS
/// overrides), so work shorter than that stays quiet. Nothing below log level Info.
class Progress {
 public:
  Progress(std::string label, uint64_t total);
  ~Progress();
  /// Adds `n` finished items.
  void add(uint64_t n = 1);
  /// Prints the final line (when shown) and stops.
  void finish();

 private:
  void draw(bool final_line);
  std::string label_;
  uint64_t total_ = 0;
  uint64_t done_ = 0;
  bool enabled_ = false;
  bool tty_ = false;
  bool plain_shown_ = false;  // a plain (not terminal) line was printed: finish() prints the last
  double plain_every_ = 30;   // seconds between plain lines
  bool finished_ = false;
  std::chrono::steady_clock::time_point start_, last_draw_;
};

}  // namespace sieve
