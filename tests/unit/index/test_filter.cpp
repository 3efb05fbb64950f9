// Metadata filters (sieve/filter.h): every operator against hand-worked answers on four documents,
// dates compared as instants, the refusals naming their place in the filter, the metadata check,
// and RFC 3339 instants against hand-computed seconds.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sieve/filter.h"
#include "support/test_util.h"

namespace sieve {
namespace {

const std::vector<std::string> kDocs = {
    R"({"year": 2019, "lang": "en", "tags": ["law", "eu"], "published": "2019-06-01T00:00:00Z", "open": true})",
    R"({"year": 2021, "lang": "de", "tags": ["med"], "published": "2021-01-15"})",
    R"({"year": 2023, "lang": "fr", "open": false})",
    "",  // no metadata
};

std::string passing(const std::string& filter) {
  const Filter f = Filter::parse(filter);
  std::string out;
  for (size_t i = 0; i < kDocs.size(); ++i)
    if (f.matches(kDocs[i])) out += "d" + std::to_string(i);
  return out;
}

TEST(Filter, EveryOperatorAsWorkedByHand) {
  EXPECT_EQ(passing(""), "d0d1d2d3");
  EXPECT_EQ(passing("{}"), "d0d1d2d3");
  EXPECT_TRUE(Filter::parse("{}").empty());
  EXPECT_EQ(passing(R"({"year": 2019})"), "d0");
  EXPECT_EQ(passing(R"({"year": 2019.0})"), "d0");
  EXPECT_EQ(passing(R"({"year": {"$eq": 2021}})"), "d1");
  EXPECT_EQ(passing(R"({"year": {"$ne": 2021}})"), "d0d2d3");  // a missing field is not equal
  EXPECT_EQ(passing(R"({"year": {"$gte": 2020}})"), "d1d2");
  EXPECT_EQ(passing(R"({"year": {"$gt": 2018, "$lt": 2022}})"), "d0d1");
  EXPECT_EQ(passing(R"({"year": {"$lte": 2019}})"), "d0");
  EXPECT_EQ(passing(R"({"lang": {"$in": ["en", "de"]}})"), "d0d1");
  EXPECT_EQ(passing(R"({"lang": {"$nin": ["en", "de"]}})"), "d2d3");
  EXPECT_EQ(passing(R"({"lang": {"$in": []}})"), "");
  EXPECT_EQ(passing(R"({"tags": "law"})"), "d0");  // a list holds when one of its strings does
  EXPECT_EQ(passing(R"({"tags": {"$in": ["med", "tax"]}})"), "d1");
  EXPECT_EQ(passing(R"({"tags": {"$ne": "law"}})"), "d1d2d3");
  EXPECT_EQ(passing(R"({"open": true})"), "d0");
  EXPECT_EQ(passing(R"({"open": {"$exists": true}})"), "d0d2");
  EXPECT_EQ(passing(R"({"open": {"$exists": false}})"), "d1d3");
  EXPECT_EQ(passing(R"({"open": 1})"), "");  // a boolean is not a number
  EXPECT_EQ(passing(R"({"year": "2019"})"), "");  // nor a string
  EXPECT_EQ(passing(R"({"nothere": 1})"), "");  // a field no document has: nothing, not an error
  // Dates compare as instants, whichever way they are written.
  EXPECT_EQ(passing(R"({"published": {"$lt": "2020-01-01"}})"), "d0");
  EXPECT_EQ(passing(R"({"published": {"$gte": "2021-01-15T00:00:00Z"}})"), "d1");
  EXPECT_EQ(passing(R"({"published": {"$gt": "2021-01-14T23:00:00-02:00"}})"), "");  // 01:00Z on the 15th
  EXPECT_EQ(passing(R"({"published": "2021-01-15T00:00:00+00:00"})"), "d1");
  EXPECT_EQ(passing(R"({"lang": {"$gt": 5}})"), "");  // a range on a string field: no number there
  // Logic.
  EXPECT_EQ(passing(R"({"$or": [{"year": 2019}, {"lang": "fr"}]})"), "d0d2");
  EXPECT_EQ(passing(R"({"$and": [{"lang": "en"}, {"open": true}]})"), "d0");
  EXPECT_EQ(passing(R"({"lang": "en", "open": false})"), "");
  EXPECT_EQ(passing(R"({"$not": {"year": {"$gt": 2020}}})"), "d0d3");
  EXPECT_EQ(passing(R"({"year": {"$not": {"$gt": 2020}}})"), "d0d3");
  EXPECT_EQ(passing(R"({"$or": [{"$not": {"open": {"$exists": true}}}, {"tags": "eu"}]})"), "d0d1d3");
  EXPECT_EQ(Filter::parse(R"({"b": 1, "a": {"$in": ["x"]}})").fields(), (std::vector<std::string>{"a", "b"}));
  // The normal form reads back as itself.
  const Filter f = Filter::parse(R"({"year": {"$gte": 2020}, "$or": [{"lang": "de"}, {"tags": {"$nin": ["x"]}}]})");
  EXPECT_EQ(Filter::parse(f.to_json()).to_json(), f.to_json());
  EXPECT_EQ(passing(f.to_json()), passing(R"({"year": {"$gte": 2020}, "$or": [{"lang": "de"}, {"tags": {"$nin": ["x"]}}]})"));
}

TEST(Filter, RefusalsNameTheirPlace) {
  test::expect_error([] { Filter::parse("not json"); }, "filter: not valid JSON");
  test::expect_error([] { Filter::parse("[1]"); }, "filter: a filter is a JSON object, not a list");
  test::expect_error([] { Filter::parse(R"({"year": {"$foo": 1}})"); }, "filter.year.$foo: unknown operator '$foo'");
  test::expect_error([] { Filter::parse(R"({"$xor": []})"); }, "filter.$xor: unknown operator '$xor'");
  test::expect_error([] { Filter::parse(R"({"year": {"$gt": "soon"}})"); },
                     "filter.year.$gt: a range compares numbers or RFC 3339 dates");
  test::expect_error([] { Filter::parse(R"({"year": {"$lte": true}})"); }, "filter.year.$lte: a range compares");
  test::expect_error([] { Filter::parse(R"({"$or": []})"); }, "filter.$or: $or takes a non-empty list");
  test::expect_error([] { Filter::parse(R"({"$or": [{"a": 1}, 3]})"); }, "filter.$or[1]: a filter is a JSON object");
  test::expect_error([] { Filter::parse(R"({"lang": {"$in": "en"}})"); }, "filter.lang.$in: $in takes a list");
  test::expect_error([] { Filter::parse(R"({"lang": {"$in": ["en", {"x": 1}]}})"); }, "filter.lang.$in[1]: each value");
  test::expect_error([] { Filter::parse(R"({"open": {"$exists": 1}})"); }, "filter.open.$exists: $exists takes true or false");
  test::expect_error([] { Filter::parse(R"({"tags": ["a"]})"); }, "filter.tags: a list is not a value");
  test::expect_error([] { Filter::parse(R"({"tags": null})"); }, "filter.tags: a value must be");
  test::expect_error([] { Filter::parse(R"({"tags": {}})"); }, "filter.tags: an empty operator object");
  test::expect_error([] { Filter::parse(R"({"$and": [{"$or": [{"y": {"$gt": []}}]}]})"); },
                     "filter.$and[0].$or[0].y.$gt: a range compares");
}

TEST(Filter, MetadataIsAFlatObjectOfSupportedValues) {
  EXPECT_EQ(check_metadata(""), "");
  EXPECT_EQ(check_metadata(R"({"b": [ "x" ], "a": 1.5, "c": true})"), R"({"a":1.5,"b":["x"],"c":true})");
  test::expect_error([] { check_metadata("[1]"); }, "metadata: must be a JSON object");
  test::expect_error([] { check_metadata(R"({"a": {"b": 1}})"); }, "metadata.a: a field is a string");
  test::expect_error([] { check_metadata(R"({"a": [1]})"); }, "metadata.a[0]: a list holds strings only");
  test::expect_error([] { check_metadata(R"({"a": null})"); }, "metadata.a: a field is a string");
  test::expect_error([] { check_metadata(R"({"$a": 1})"); }, "field name '$a'");
  test::expect_error([] { check_metadata(R"({"a": "xxxxxxxx"})", 10); }, "more than the limit of 10");
  test::expect_error([] { check_metadata("{"); }, "metadata: not valid JSON");
}

TEST(Filter, Rfc3339InstantsAsComputedByHand) {
  double t = 0;
  ASSERT_TRUE(parse_rfc3339("1970-01-01T00:00:00Z", &t));
  EXPECT_EQ(t, 0.0);
  ASSERT_TRUE(parse_rfc3339("2024-05-01", &t));
  EXPECT_EQ(t, 19844.0 * 86400);  // 54 years of days, 13 of them leap, then 121 days of 2024
  ASSERT_TRUE(parse_rfc3339("2024-05-01T12:00:00.5+02:00", &t));
  EXPECT_EQ(t, 19844.0 * 86400 + 10 * 3600 + 0.5);
  ASSERT_TRUE(parse_rfc3339("1969-12-31T23:59:59Z", &t));
  EXPECT_EQ(t, -1.0);
  ASSERT_TRUE(parse_rfc3339("2024-02-29", &t));
  EXPECT_FALSE(parse_rfc3339("2023-02-29", &t));
  EXPECT_FALSE(parse_rfc3339("2024-05-01T12:00:00", &t));  // a date-time needs its offset
  EXPECT_FALSE(parse_rfc3339("2024-13-01", &t));
  EXPECT_FALSE(parse_rfc3339("2024-05-01T25:00:00Z", &t));
  EXPECT_FALSE(parse_rfc3339("soon", &t));
  EXPECT_FALSE(parse_rfc3339("2024-05-01T12:00:00.Z", &t));
}

}  // namespace
}  // namespace sieve
