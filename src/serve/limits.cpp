#include "serve/limits.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "sieve/error.h"

namespace sieve::serve {

long retry_after_header(double seconds) {
  if (!(seconds > 1)) return 1;
  return static_cast<long>(std::ceil(std::min(seconds, 86400.0)));
}

void check_client_limits(const ClientLimits& l, const std::string& what) {
  SIEVE_THROW_IF_NOT(std::isfinite(l.rate) && l.rate >= 0, what << ": the rate must be a number >= 0, not " << l.rate);
  SIEVE_THROW_IF_NOT(std::isfinite(l.burst) && (l.burst == 0 || l.burst >= 1),
                     what << ": the burst must be 0 (the rate, at least 1) or at least 1, not " << l.burst
                          << " (a bucket that never holds a whole request would refuse its client forever)");
}

ClientLimiter::Verdict ClientLimiter::admit(const std::string& client, const ClientLimits& limits,
                                            Clock::time_point now) {
  Verdict v;
  if (limits.rate <= 0 && limits.concurrent == 0) return v;
  std::lock_guard<std::mutex> lock(mu_);
  // Past 4,096 clients the map is scanned for idle ones when it has doubled since the last scan,
  // or a second after it: never on every admit, whatever the clients do.
  if (clients_.size() > scan_at_ || (clients_.size() > 4096 && now - last_scan_ >= std::chrono::seconds(1))) {
    forget_idle(now);
    last_scan_ = now;
    scan_at_ = std::max<size_t>(4096, 2 * clients_.size());
  }
  const double burst = limits.burst > 0 ? limits.burst : std::max(1.0, limits.rate);
  if (clients_.size() >= kMaxClients && clients_.find(client) == clients_.end()) {
    v.admitted = false;
    v.retry_after = 1;
    v.why = "the server is tracking as many clients as it may (" + std::to_string(kMaxClients) +
            ") and none is idle; retry shortly";
    return v;
  }
  auto [it, added] = clients_.try_emplace(client);
  State& s = it->second;
  if (added) {  // a new client starts with a full bucket
    s.tokens = burst;
    s.refilled = now;
  }
  s.rate = limits.rate;
  s.burst = burst;
  if (limits.rate > 0) {
    const double elapsed = std::max(0.0, std::chrono::duration<double>(now - s.refilled).count());
    s.tokens = std::min(burst, s.tokens + elapsed * limits.rate);
    s.refilled = std::max(s.refilled, now);
  }
  if (limits.concurrent > 0 && s.in_flight >= limits.concurrent) {
    v.admitted = false;
    v.retry_after = 1;
    std::ostringstream why;
    why << s.in_flight << " requests of this client are in flight, its limit is " << limits.concurrent;
    v.why = why.str();
    return v;
  }
  if (limits.rate > 0) {
    if (s.tokens < 1) {
      v.admitted = false;
      v.retry_after = (1 - s.tokens) / limits.rate;
      std::ostringstream why;
      why << "this client is over its rate of " << limits.rate << " requests/s (burst " << burst << "); the next is "
          << "admitted in " << static_cast<long>(std::ceil(v.retry_after * 1000)) << " ms";
      v.why = why.str();
      return v;
    }
    s.tokens -= 1;
  }
  if (limits.concurrent > 0) ++s.in_flight;
  return v;
}

void ClientLimiter::release(const std::string& client) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = clients_.find(client);
  if (it != clients_.end() && it->second.in_flight > 0) --it->second.in_flight;
}

bool ClientLimiter::begin_hold(const std::string& client, size_t most, size_t most_total) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = clients_.find(client);
  if (it == clients_.end() || it->second.held >= most || held_total_ >= most_total) return false;
  ++it->second.held;
  ++held_total_;
  return true;
}

void ClientLimiter::end_hold(const std::string& client) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = clients_.find(client);
  if (it != clients_.end() && it->second.held > 0) {
    --it->second.held;
    --held_total_;
  }
}

size_t ClientLimiter::clients() const {
  std::lock_guard<std::mutex> lock(mu_);
  return clients_.size();
}

size_t ClientLimiter::in_flight(const std::string& client) const {
  std::lock_guard<std::mutex> lock(mu_);
  const auto it = clients_.find(client);
  return it == clients_.end() ? 0 : it->second.in_flight;
}

size_t ClientLimiter::idle_scans() const {
  std::lock_guard<std::mutex> lock(mu_);
  return scans_;
}

void ClientLimiter::forget_idle(Clock::time_point now) {
  ++scans_;
  // A client with nothing in flight and a bucket that has refilled is as good as a new one.
  for (auto it = clients_.begin(); it != clients_.end();) {
    const State& s = it->second;
    const double elapsed = std::chrono::duration<double>(now - s.refilled).count();
    const bool full = s.rate <= 0 || s.tokens + elapsed * s.rate >= s.burst;
    it = s.in_flight == 0 && s.held == 0 && full ? clients_.erase(it) : std::next(it);
  }
}

}  // namespace sieve::serve
