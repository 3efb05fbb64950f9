#include "serve/request_json.h"

#include <algorithm>
#include <cmath>

namespace sieve::serve {

HttpError bad(const std::string& message) { return HttpError(400, "invalid_request_error", message); }
HttpError too_much(const std::string& message) { return HttpError(422, "invalid_request_error", message); }

// Where a body stops being JSON, in our words: the byte, its line and column, and the text
// around it (the parser's own message names its internals).
std::string where_json_breaks(const std::string& body, size_t byte) {
  if (body.find_first_not_of(" \t\r\n") == std::string::npos) return "the body is empty, not a JSON object";
  const size_t at = std::min(byte > 0 ? byte - 1 : 0, body.size());
  size_t line = 1, column = 1;
  for (size_t i = 0; i < at; ++i) {
    if (body[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  if (at >= body.size()) return "the JSON ends too early (after " + std::to_string(body.size()) + " bytes; a brace, bracket or quote is not closed)";
  const size_t from = at >= 20 ? at - 20 : 0;
  std::string near = body.substr(from, std::min<size_t>(40, body.size() - from));
  for (char& c : near)
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  return "malformed JSON at line " + std::to_string(line) + ", column " + std::to_string(column) + " (byte " +
         std::to_string(at + 1) + "), near \"" + near + "\"";
}

// The body as a JSON object whose keys are all among `fields` (a typo must not pass silently:
// 422 naming the unknown ones and what is accepted).
json parse_object(const std::string& body, const std::vector<std::string>& fields) {
  json j;
  try {
    j = json::parse(body);
  } catch (const json::parse_error& e) {
    throw bad(where_json_breaks(body, e.byte));
  } catch (const json::exception&) {
    throw bad("the body is not valid JSON (UTF-8 text expected)");
  }
  if (!j.is_object()) throw bad("the request body must be a JSON object");
  std::string unknown, accepted;
  for (const std::string& f : fields) accepted += (accepted.empty() ? "" : ", ") + f;
  for (const auto& [key, value] : j.items()) {
    bool known = false;
    for (const std::string& f : fields) known = known || key == f;
    if (!known) unknown += std::string(unknown.empty() ? "'" : ", '") + key + "'";
  }
  if (!unknown.empty())
    throw HttpError(422, "invalid_request_error", "unknown field(s) " + unknown + " (accepted: " + accepted + ")");
  return j;
}

// A string or an array of strings; `required` or an empty vector when absent.
std::vector<std::string> strings_of(const json& j, const char* field, bool required) {
  if (!j.contains(field)) {
    if (required) throw bad(std::string("missing field '") + field + "'");
    return {};
  }
  const json& v = j.at(field);
  if (v.is_string()) return {v.get<std::string>()};
  if (!v.is_array()) throw bad(std::string("'") + field + "' must be a string or an array of strings");
  std::vector<std::string> out;
  for (const auto& x : v) {
    if (!x.is_string()) throw bad(std::string("'") + field + "' must be a string or an array of strings");
    out.push_back(x.get<std::string>());
  }
  return out;
}

bool bool_of(const json& j, const char* field, bool def) {
  if (!j.contains(field) || j.at(field).is_null()) return def;
  if (!j.at(field).is_boolean()) throw bad(std::string("'") + field + "' must be true or false");
  return j.at(field).get<bool>();
}

// A JSON integer, also written with a zero fraction (187.0 is the integer 187, as JSON Schema
// says); false for anything else.
bool whole_number(const json& v, int64_t* out) {
  if (v.is_number_integer()) {
    *out = v.get<int64_t>();
    return true;
  }
  if (!v.is_number_float()) return false;
  const double d = v.get<double>();
  if (!(std::floor(d) == d && std::fabs(d) < 9.0e15)) return false;
  *out = static_cast<int64_t>(d);
  return true;
}

size_t count_of(const json& j, const char* field, size_t def, size_t max) {
  if (!j.contains(field) || j.at(field).is_null()) return def;
  const json& v = j.at(field);
  int64_t whole = 0;
  if (!whole_number(v, &whole) || whole < 1) throw bad(std::string("'") + field + "' must be a positive integer");
  const auto n = static_cast<uint64_t>(whole);
  if (n > max) throw too_much(std::string("'") + field + "' is " + std::to_string(n) + ", more than the limit " + std::to_string(max));
  return static_cast<size_t>(n);
}

double number_of(const json& j, const char* field, double def) {
  if (!j.contains(field) || j.at(field).is_null()) return def;
  if (!j.at(field).is_number()) throw bad(std::string("'") + field + "' must be a number");
  return j.at(field).get<double>();
}

std::string string_of(const json& j, const char* field, const std::string& def) {
  if (!j.contains(field) || j.at(field).is_null()) return def;
  if (!j.at(field).is_string()) throw bad(std::string("'") + field + "' must be a string");
  return j.at(field).get<std::string>();
}

json floats(const float* v, size_t n) {
  json a = json::array();
  for (size_t i = 0; i < n; ++i) a.push_back(v[i]);
  return a;
}

Filter filter_of(const json& j) {
  if (!j.contains("filter") || j.at("filter").is_null()) return Filter();
  if (!j.at("filter").is_object()) throw too_much("'filter' must be a JSON object (docs/filters.md)");
  try {
    return Filter::parse(j.at("filter").dump());
  } catch (const Error& e) {
    throw too_much(e.what());
  }
}

}  // namespace sieve::serve
