// Metadata filters (sieve/filter.h): the parser, the evaluator and the metadata check.
#include "sieve/filter.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <set>

#include "index/filter_node.h"
#include "sieve/error.h"

namespace sieve {

using json = nlohmann::json;
using namespace filter_detail;

namespace {

std::string type_of(const json& j) {
  switch (j.type()) {
    case json::value_t::null: return "null";
    case json::value_t::boolean: return "a boolean";
    case json::value_t::string: return "a string";
    case json::value_t::array: return "a list";
    case json::value_t::object: return "an object";
    default: return "a number";
  }
}

int digits(const std::string& s, size_t at, size_t n, bool* ok) {
  int v = 0;
  for (size_t i = at; i < at + n; ++i) {
    if (i >= s.size() || !std::isdigit(static_cast<unsigned char>(s[i]))) {
      *ok = false;
      return 0;
    }
    v = v * 10 + (s[i] - '0');
  }
  return v;
}

// Days from 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil).
int64_t days_from_civil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const auto yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

}  // namespace

bool parse_rfc3339(const std::string& s, double* seconds) {
  bool ok = true;
  if (s.size() < 10 || s[4] != '-' || s[7] != '-') return false;
  const int y = digits(s, 0, 4, &ok), mo = digits(s, 5, 2, &ok), d = digits(s, 8, 2, &ok);
  if (!ok || mo < 1 || mo > 12 || d < 1) return false;
  static const int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  if (d > kDays[mo - 1] + (mo == 2 && leap ? 1 : 0)) return false;
  double t = static_cast<double>(days_from_civil(y, static_cast<unsigned>(mo), static_cast<unsigned>(d))) * 86400.0;
  if (s.size() == 10) {
    *seconds = t;
    return true;
  }
  if ((s[10] != 'T' && s[10] != 't' && s[10] != ' ') || s.size() < 20 || s[13] != ':' || s[16] != ':') return false;
  const int h = digits(s, 11, 2, &ok), mi = digits(s, 14, 2, &ok), se = digits(s, 17, 2, &ok);
  if (!ok || h > 23 || mi > 59 || se > 60) return false;
  t += h * 3600.0 + mi * 60.0 + se;
  size_t i = 19;
  if (i < s.size() && s[i] == '.') {
    double scale = 0.1;
    size_t start = ++i;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) {
      t += (s[i] - '0') * scale;
      scale /= 10;
      ++i;
    }
    if (i == start) return false;
  }
  if (i >= s.size()) return false;  // a date-time needs its offset
  if ((s[i] == 'Z' || s[i] == 'z') && i + 1 == s.size()) {
    *seconds = t;
    return true;
  }
  if ((s[i] != '+' && s[i] != '-') || i + 6 != s.size() || s[i + 3] != ':') return false;
  const int oh = digits(s, i + 1, 2, &ok), om = digits(s, i + 4, 2, &ok);
  if (!ok || oh > 23 || om > 59) return false;
  const double offset = oh * 3600.0 + om * 60.0;
  *seconds = s[i] == '+' ? t - offset : t + offset;
  return true;
}

namespace {

using NodePtr = std::shared_ptr<const Filter::Node>;

Value scalar(const json& j, const std::string& where, const char* what) {
  Value v;
  if (j.is_string()) {
    v.type = Value::Str;
    v.s = j.get<std::string>();
    v.date = parse_rfc3339(v.s, &v.t);
  } else if (j.is_boolean()) {
    v.type = Value::Bool;
    v.b = j.get<bool>();
  } else if (j.is_number()) {
    v.type = Value::Num;
    v.n = j.get<double>();
    SIEVE_THROW_IF_NOT(std::isfinite(v.n), where << ": " << what << " must be a finite number");
  } else {
    SIEVE_THROW(where << ": " << what << " must be a string, a number or a boolean, not " << type_of(j));
  }
  return v;
}

NodePtr combine(Filter::Node::Kind kind, std::vector<NodePtr> children) {
  if (children.size() == 1 && kind == Filter::Node::And) return children[0];
  auto n = std::make_shared<Filter::Node>();
  n->kind = children.empty() ? Filter::Node::All : kind;
  n->children = std::move(children);
  return n;
}

NodePtr parse_filter(const json& j, const std::string& where);

// FIELD: {OPERATOR: OPERAND, ...} or FIELD: VALUE.
NodePtr parse_field(const std::string& field, const json& j, const std::string& where) {
  if (!j.is_object()) {
    SIEVE_THROW_IF_NOT(!j.is_array(), where << ": a list is not a value to compare with (use $in for any of several)");
    auto n = std::make_shared<Filter::Node>();
    n->kind = Filter::Node::Field;
    n->field = field;
    n->op = Op::Eq;
    n->operands.push_back(scalar(j, where, "a value"));
    return n;
  }
  SIEVE_THROW_IF_NOT(!j.empty(), where << ": an empty operator object (give $eq, $in, $gte, ...)");
  std::vector<NodePtr> parts;
  for (const auto& [key, operand] : j.items()) {
    const std::string at = where + "." + key;
    if (key == "$not") {
      SIEVE_THROW_IF_NOT(operand.is_object(), at << ": $not on a field takes an operator object, not " << type_of(operand));
      auto n = std::make_shared<Filter::Node>();
      n->kind = Filter::Node::Not;
      n->children.push_back(parse_field(field, operand, at));
      parts.push_back(n);
      continue;
    }
    Op op;
    SIEVE_THROW_IF_NOT(op_from_name(key, &op), at << ": unknown operator '" << key
                                                  << "' (on a field: $eq $ne $in $nin $gt $gte $lt $lte $exists $not)");
    auto n = std::make_shared<Filter::Node>();
    n->kind = Filter::Node::Field;
    n->field = field;
    n->op = op;
    if (op == Op::Exists) {
      SIEVE_THROW_IF_NOT(operand.is_boolean(), at << ": $exists takes true or false, not " << type_of(operand));
      n->exists = operand.get<bool>();
    } else if (op == Op::In || op == Op::Nin) {
      SIEVE_THROW_IF_NOT(operand.is_array(), at << ": " << key << " takes a list, not " << type_of(operand));
      for (size_t i = 0; i < operand.size(); ++i)
        n->operands.push_back(scalar(operand[i], at + "[" + std::to_string(i) + "]", "each value"));
    } else if (is_range(op)) {
      Value v;
      if (operand.is_number() && std::isfinite(operand.get<double>())) {
        v.type = Value::Num;
        v.n = operand.get<double>();
      } else if (operand.is_string() && parse_rfc3339(operand.get<std::string>(), &v.t)) {
        v.type = Value::Str;
        v.s = operand.get<std::string>();
        v.date = true;
      } else {
        SIEVE_THROW(at << ": a range compares numbers or RFC 3339 dates (\"2024-05-01\", \"2024-05-01T12:00:00Z\"), not "
                       << (operand.is_string() ? "the string \"" + operand.get<std::string>() + "\"" : type_of(operand)));
      }
      n->operands.push_back(v);
    } else {
      n->operands.push_back(scalar(operand, at, key.c_str()));
    }
    parts.push_back(n);
  }
  return combine(Filter::Node::And, std::move(parts));
}

NodePtr parse_list(const std::string& key, const json& j, const std::string& where, Filter::Node::Kind kind) {
  SIEVE_THROW_IF_NOT(j.is_array() && !j.empty(), where << ": " << key << " takes a non-empty list of filters, not "
                                                      << (j.is_array() ? "an empty list" : type_of(j)));
  std::vector<NodePtr> parts;
  for (size_t i = 0; i < j.size(); ++i) parts.push_back(parse_filter(j[i], where + "[" + std::to_string(i) + "]"));
  auto n = std::make_shared<Filter::Node>();
  n->kind = kind;
  n->children = std::move(parts);
  return n;
}

NodePtr parse_filter(const json& j, const std::string& where) {
  SIEVE_THROW_IF_NOT(j.is_object(), where << ": a filter is a JSON object, not " << type_of(j));
  std::vector<NodePtr> parts;
  for (const auto& [key, value] : j.items()) {
    const std::string at = where + "." + key;
    if (key == "$and") {
      parts.push_back(parse_list(key, value, at, Filter::Node::And));
    } else if (key == "$or") {
      parts.push_back(parse_list(key, value, at, Filter::Node::Or));
    } else if (key == "$not") {
      auto n = std::make_shared<Filter::Node>();
      n->kind = Filter::Node::Not;
      n->children.push_back(parse_filter(value, at));
      parts.push_back(n);
    } else {
      SIEVE_THROW_IF_NOT(!key.empty(), where << ": an empty field name");
      SIEVE_THROW_IF_NOT(key[0] != '$', at << ": unknown operator '" << key << "' (at this level: $and $or $not, or a field name)");
      parts.push_back(parse_field(key, value, at));
    }
  }
  return combine(Filter::Node::And, std::move(parts));
}

}  // namespace

Filter::Filter() : root_(std::make_shared<Node>()) {}
Filter::~Filter() = default;
Filter::Filter(const Filter&) = default;
Filter& Filter::operator=(const Filter&) = default;

Filter Filter::parse(const std::string& text) {
  Filter f;
  if (text.find_first_not_of(" \t\r\n") == std::string::npos) return f;
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    SIEVE_THROW("filter: not valid JSON (" << e.what() << ")");
  }
  f.root_ = parse_filter(j, "filter");
  return f;
}

bool Filter::empty() const { return root_->kind == Node::All; }

bool Filter::matches(const std::string& metadata_json) const {
  if (empty()) return true;
  const json m = metadata_json.empty() ? json::object() : json::parse(metadata_json, nullptr, false);
  return root_->matches(m.is_object() ? m : json::object());
}

std::vector<std::string> Filter::fields() const {
  std::set<std::string> s;
  root_->collect(s);
  return {s.begin(), s.end()};
}

std::string Filter::to_json() const { return root_->to_json().dump(); }

std::string check_metadata(const std::string& text, size_t max_bytes) {
  if (text.find_first_not_of(" \t\r\n") == std::string::npos) return "";
  SIEVE_THROW_IF_NOT(text.size() <= max_bytes,
                     "metadata: " << text.size() << " bytes of JSON, more than the limit of " << max_bytes);
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    SIEVE_THROW("metadata: not valid JSON (" << e.what() << ")");
  }
  SIEVE_THROW_IF_NOT(j.is_object(), "metadata: must be a JSON object of fields, not " << type_of(j));
  for (const auto& [key, v] : j.items()) {
    SIEVE_THROW_IF_NOT(!key.empty() && key[0] != '$', "metadata: the field name '" << key
                                                                                   << "' is empty or starts with '$'");
    const std::string at = "metadata." + key;
    if (v.is_array()) {
      for (size_t i = 0; i < v.size(); ++i)
        SIEVE_THROW_IF_NOT(v[i].is_string(), at << "[" << i << "]: a list holds strings only, not " << type_of(v[i]));
    } else {
      SIEVE_THROW_IF_NOT(v.is_string() || v.is_boolean() || v.is_number(),
                         at << ": a field is a string, a number, a boolean or a list of strings, not " << type_of(v));
      SIEVE_THROW_IF_NOT(!v.is_number() || std::isfinite(v.get<double>()), at << ": a number must be finite");
    }
  }
  return j.dump();
}

double expiry_instant(const std::string& expires_at, double ttl_s, double now) {
  const bool has_ttl = !std::isnan(ttl_s);
  SIEVE_THROW_IF_NOT(!(has_ttl && !expires_at.empty()), "give expires_at or ttl_s, not both");
  if (has_ttl) {
    SIEVE_THROW_IF_NOT(std::isfinite(ttl_s) && ttl_s > 0, "ttl_s must be a positive number of seconds, not " << ttl_s);
    return now + ttl_s;
  }
  if (expires_at.empty()) return 0;
  double t;
  // A date at or before 1970 has expired already: one second after 1970 (0 means never).
  if (parse_rfc3339(expires_at, &t)) return std::max(t, 1.0);
  char* end = nullptr;
  t = std::strtod(expires_at.c_str(), &end);  // strtod, not stod: a denormal is a number too
  SIEVE_THROW_IF_NOT(end == expires_at.c_str() + expires_at.size() && std::isfinite(t) && t > 0,
                     "expires_at: '" << expires_at << "' is neither an RFC 3339 date-time (\"2030-01-01T00:00:00Z\") nor "
                                     << "a positive number of seconds since 1970");
  return t;
}

}  // namespace sieve
