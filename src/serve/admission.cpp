#include "serve/admission.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "sieve/error.h"

namespace sieve::serve {

bool equal_constant_time(const std::string& a, const std::string& b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  const size_t n = std::max(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= static_cast<unsigned char>(x ^ y);
  }
  return diff == 0;
}

std::string client_address_from_header(const std::string& value) {
  const size_t comma = value.rfind(',');
  std::string last = comma == std::string::npos ? value : value.substr(comma + 1);
  const size_t b = last.find_first_not_of(" \t"), e = last.find_last_not_of(" \t");
  return b == std::string::npos ? std::string() : last.substr(b, e - b + 1);
}

std::string client_address(const std::string& peer, const std::optional<std::string>& header_last) {
  if (header_last) {
    std::string address = client_address_from_header(*header_last);
    if (!address.empty()) return address;
  }
  return peer;
}

ClientLimits ApiKey::limits(const ClientLimits& server) const {
  ClientLimits l = server;
  if (rate) l.rate = *rate;
  if (burst) l.burst = *burst;
  if (concurrent) l.concurrent = *concurrent;
  return l;
}

std::vector<ApiKey> read_api_keys(const std::string& path) {
  std::ifstream f(path);
  SIEVE_THROW_IF_NOT(f.good(), "cannot read the API key file '" << path << "'");
  std::vector<ApiKey> keys;
  std::string line;
  for (size_t n = 1; std::getline(f, line); ++n) {
    std::istringstream words(line);
    std::string key, word;
    words >> key;
    if (key.empty() || key[0] == '#') continue;
    ApiKey k;
    k.key = key;
    bool scoped = false;
    while (words >> word) {
      const size_t eq = word.find('=');
      if (eq == std::string::npos) {
        SIEVE_THROW_IF_NOT(!scoped, "'" << path << "' line " << n << ": two scopes ('" << word << "')");
        scoped = true;
        if (word == "read") k.scope = KeyScope::Read;
        else if (word == "write") k.scope = KeyScope::Write;
        else if (word == "admin") k.scope = KeyScope::Admin;
        else SIEVE_THROW("'" << path << "' line " << n << ": unknown scope '" << word << "' (read, write or admin)");
        continue;
      }
      const std::string name = word.substr(0, eq), value = word.substr(eq + 1);
      char* end = nullptr;
      const double x = std::strtod(value.c_str(), &end);
      SIEVE_THROW_IF_NOT(!value.empty() && end && *end == '\0' && std::isfinite(x) && x >= 0,
                         "'" << path << "' line " << n << ": '" << word << "' needs a number >= 0");
      if (name == "rate") k.rate = x;
      else if (name == "burst") {
        SIEVE_THROW_IF_NOT(x == 0 || x >= 1, "'" << path << "' line " << n << ": burst= must be 0 (the rate) or at least "
                                                 "1 (a bucket below one request would refuse the key forever)");
        k.burst = x;
      }
      else if (name == "concurrent") {
        SIEVE_THROW_IF_NOT(x == std::floor(x), "'" << path << "' line " << n << ": concurrent= takes a whole number");
        k.concurrent = static_cast<size_t>(x);
      } else
        SIEVE_THROW("'" << path << "' line " << n << ": unknown limit '" << name << "' (rate=, burst=, concurrent=)");
    }
    for (const ApiKey& other : keys)
      SIEVE_THROW_IF_NOT(other.key != k.key, "'" << path << "' line " << n << ": a key given twice");
    keys.push_back(std::move(k));
  }
  SIEVE_THROW_IF_NOT(!keys.empty(), "the API key file '" << path << "' holds no key");
  return keys;
}

std::optional<KeyScope> scope_needed(const std::string& method, const std::string& path) {
  if (path == "/health" || (path == "/" && method == "GET") || path == "/openapi.json") return std::nullopt;
  if (path == "/metrics" || path == "/v1/info" || path == "/router/stats") return KeyScope::Admin;
  // Every write of documents: POST /v1/documents, POST /v1/documents/delete, PUT and DELETE of one.
  if (path.rfind("/v1/documents", 0) == 0 && method != "GET") return KeyScope::Write;
  // The cache: a lookup reads; a store and every invalidation write.
  if (path.rfind("/v1/cache", 0) == 0 && method != "GET" && path != "/v1/cache/lookup") return KeyScope::Write;
  return KeyScope::Read;
}

AdmissionTicket& AdmissionTicket::operator=(AdmissionTicket&& o) noexcept {
  if (this != &o) {
    end();
    a_ = o.a_;
    client_ = std::move(o.client_);
    o.a_ = nullptr;
  }
  return *this;
}

void AdmissionTicket::end() {
  if (a_) a_->release(client_);
  a_ = nullptr;
}

Admission::Admission(AdmissionOptions opt, size_t request_threads) : opt_(std::move(opt)) {
  check_client_limits(opt_.limits, "the server's limits (--rate-limit, --burst)");
  for (const ApiKey& k : opt_.api_keys) check_client_limits(k.limits(opt_.limits), "an API key's limits");
  held_total_cap_ = opt_.refusals_held_total > 0 ? opt_.refusals_held_total
                                                 : std::max<size_t>(1, std::max<size_t>(4, request_threads) / 2);
  std::vector<ApiKey> keys = opt_.api_keys;
  if (!opt_.api_key.empty()) {
    ApiKey k;
    k.key = opt_.api_key;
    keys.push_back(std::move(k));
  }
  set_api_keys(std::move(keys));
}

void Admission::set_api_keys(std::vector<ApiKey> keys) {
  auto next = std::make_shared<const std::vector<ApiKey>>(std::move(keys));
  std::lock_guard<std::mutex> lock(keys_mu_);
  keys_ = std::move(next);
}

std::optional<Response> Admission::body_refusal(size_t bytes) const {
  if (bytes <= opt_.max_body) return std::nullopt;
  return error_response(413, "payload_too_large", "the request body (" + std::to_string(bytes) +
                                                      " bytes) is larger than " + std::to_string(opt_.max_body) +
                                                      " bytes (--max-body)");
}

Caller Admission::identify(const std::string& method, const std::string& path, const std::string& authorization,
                           const std::string& address) const {
  Caller c;
  std::shared_ptr<const std::vector<ApiKey>> keys;
  {
    std::lock_guard<std::mutex> lock(keys_mu_);
    keys = keys_;
  }
  const std::optional<KeyScope> needed = scope_needed(method, path);
  // Who the request is, for its limits: its key when the server has keys, else its address.
  c.client = "address " + address;
  c.limits = opt_.limits;
  if (keys && !keys->empty() && needed) {
    // Every key is compared, in constant time each: the time says nothing of which matched.
    const ApiKey* found = nullptr;
    for (const ApiKey& k : *keys)
      if (equal_constant_time(authorization, "Bearer " + k.key)) found = &k;
    if (!found) {
      Response r = error_response(401, "unauthorized", "missing or wrong API key (Authorization: Bearer KEY)");
      r.headers.emplace_back("WWW-Authenticate", "Bearer");
      c.refusal = std::move(r);
      return c;
    }
    if (found->scope < *needed) {
      static const char* const kNames[] = {"read", "write", "admin"};
      c.refusal = error_response(403, "forbidden", method + " " + path + " needs a key of scope '" +
                                                       kNames[static_cast<int>(*needed)] + "'; this key's is '" +
                                                       kNames[static_cast<int>(found->scope)] + "'");
      return c;
    }
    c.client = "key " + found->key;
    c.limits = found->limits(opt_.limits);
  }
  // The open routes (health probes, the page, the spec) are never limited.
  c.limited = needed.has_value() && (c.limits.rate > 0 || c.limits.concurrent > 0);
  return c;
}

AdmissionVerdict Admission::admit(const std::string& method, const std::string& path, const std::string& authorization,
                                  const std::string& address) {
  return admit(identify(method, path, authorization, address));
}

AdmissionVerdict Admission::admit(Caller c) {
  AdmissionVerdict v;
  v.client = c.client;
  if (c.refusal) {
    v.refusal = std::move(c.refusal);
    return v;
  }
  if (!c.limited) return v;
  const ClientLimiter::Verdict lv = limiter_.admit(c.client, c.limits);
  if (lv.admitted) {
    if (c.limits.concurrent > 0) v.ticket = AdmissionTicket(this, c.client);
    return v;
  }
  Response r = error_response(429, "rate_limited", lv.why);
  r.headers.emplace_back("Retry-After", std::to_string(retry_after_header(lv.retry_after)));
  if (opt_.refusal_delay_ms > 0) {
    if (limiter_.begin_hold(c.client, opt_.refusals_held, held_total_cap_)) {
      v.hold_seconds = std::min<double>(static_cast<double>(opt_.refusal_delay_ms) / 1000.0, lv.retry_after);
    } else {
      v.close = true;  // past the refusals held: no more of its requests here
      r.headers.emplace_back("Connection", "close");
    }
  }
  v.refusal = std::move(r);
  return v;
}

}  // namespace sieve::serve
