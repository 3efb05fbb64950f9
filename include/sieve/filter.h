// Metadata filters: the language LLM-application users already write for Chroma, Pinecone, MongoDB
// and LangChain, over a document's metadata (a flat JSON object of strings, numbers, booleans, lists
// of strings; dates are RFC 3339 strings, compared as instants). One parser for every face.
//
//   {"year": {"$gte": 2020}, "lang": {"$in": ["en", "de"]}, "$or": [{"a": 1}, {"b": {"$exists": true}}]}
//
// A filter object's entries all hold (and); an entry is `$and` / `$or` (a non-empty list of
// filters), `$not` (a filter), or FIELD: VALUE (equality) or FIELD: {OPERATOR: OPERAND, ...} (all
// of them), with the operators $eq $ne $in $nin $gt $gte $lt $lte $exists $not (a field's own
// operator object, negated). A list field holds when any of its strings does (as MongoDB's arrays);
// a missing field satisfies only $ne, $nin, $exists: false and negations. Ranges compare numbers
// with numbers and dates with dates; anything else is refused when the filter is parsed.
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace sieve {

/// A parsed filter; matches() is safe from several threads at once.
class Filter {
 public:
  /// The filter in `json` (a JSON object; "" or "{}" matches everything). sieve::Error naming the
  /// place in the filter ("filter.$or[1].year.$gte: ...") for malformed JSON, an unknown operator,
  /// an operand of the wrong type, or a range on a non-comparable type.
  static Filter parse(const std::string& json);
  Filter();
  ~Filter();
  Filter(const Filter&);
  Filter& operator=(const Filter&);
  /// Whether the filter matches everything (no condition).
  bool empty() const;
  /// Whether a document whose metadata is `metadata_json` (a JSON object as check_metadata
  /// accepts; "" = none) passes.
  bool matches(const std::string& metadata_json) const;
  /// The fields the filter reads, sorted.
  std::vector<std::string> fields() const;
  /// The filter as normalised JSON (implicit equalities and ands written out).
  std::string to_json() const;

  struct Node;
  /// The parsed form (index/filter_node.h; for the library's own evaluators).
  const Node& root() const { return *root_; }

 private:
  std::shared_ptr<const Node> root_;
};

/// Checks a document's metadata (`json`: a JSON object, or "" for none) and returns it compact
/// (keys sorted): sieve::Error naming the field for anything but a flat object of strings, finite
/// numbers, booleans and lists of strings, for a field name that is empty or starts with '$', or
/// for more than `max_bytes` of JSON.
std::string check_metadata(const std::string& json, size_t max_bytes = 65536);

/// Seconds since 1970-01-01T00:00:00Z of an RFC 3339 date-time ("2024-05-01T12:00:00Z",
/// "2024-05-01T12:00:00.5+02:00") or full date ("2024-05-01", midnight UTC); false when `text`
/// is not one.
bool parse_rfc3339(const std::string& text, double* seconds);

/// When a written document expires, seconds since 1970 (0 = never), from what a write may give:
/// `expires_at`, an RFC 3339 date-time or a number of seconds since 1970 in decimal ("" = not
/// given), or `ttl_s` seconds from `now` (NaN = not given); a date at or before 1970 gives 1 (expired
/// already: 0 would mean never). sieve::Error for an unreadable date, a
/// ttl_s that is not a positive finite number, or both given.
double expiry_instant(const std::string& expires_at, double ttl_s, double now);

}  // namespace sieve
