// Reading a request's JSON body and writing JSON answers: the helpers the service's routes and
// its TEI and OpenAI adapters share (internal to src/serve).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "serve/service.h"

namespace sieve::serve {

using json = nlohmann::json;

/// 400 and 422 of the OpenAI-style error body (type "invalid_request_error").
HttpError bad(const std::string& message);
HttpError too_much(const std::string& message);
/// Where a body stops being JSON, in our words: the byte, its line and column, the text around it.
std::string where_json_breaks(const std::string& body, size_t byte);
/// The body as a JSON object whose keys are all among `fields` (422 naming unknown ones).
json parse_object(const std::string& body, const std::vector<std::string>& fields);
/// A string or an array of strings; `required` (400 when absent) or an empty vector.
std::vector<std::string> strings_of(const json& j, const char* field, bool required);
bool bool_of(const json& j, const char* field, bool def);
/// A JSON integer, also written with a zero fraction (187.0); false for anything else.
bool whole_number(const json& v, int64_t* out);
/// A positive integer at most `max` (422 past it), `def` when absent or null.
size_t count_of(const json& j, const char* field, size_t def, size_t max);
double number_of(const json& j, const char* field, double def);
std::string string_of(const json& j, const char* field, const std::string& def);
json floats(const float* v, size_t n);
/// The body's "filter" (a JSON object; absent or null: none); 422 with the parser's words, which
/// name the place in the filter.
Filter filter_of(const json& j);
Response json_response(const json& j, int status = 200);
/// /v1/cache/ID for an entry's id (not the literal {id}, lookup or delete).
bool is_cache_entry_path(const std::string& path);
/// The fields a route's JSON body may hold (the route table in service.cpp).
const std::vector<std::string>& fields_of(const std::string& path, const std::string& method = "POST");

}  // namespace sieve::serve
