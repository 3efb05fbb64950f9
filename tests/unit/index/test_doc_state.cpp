// DocState: the filter evaluated over metadata columns gives, document by document, what
// Filter::matches gives on that document's JSON (the independent reference: one document at a
// time, no columns); deletions and expiry take documents out; Bitmap's set operations against a
// std::vector<bool>.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <algorithm>
#include <limits>
#include <random>

#include "index/doc_state.h"
#include "index/record_log.h"
#include "sieve/filter.h"
#include "support/test_util.h"

using namespace sieve;
using namespace sieve::index;
using json = nlohmann::json;

namespace {

// Random flat metadata over a few fields of every kind (some documents lack some fields; a few
// have none at all).
std::string random_metadata(std::mt19937& rng) {
  if (rng() % 10 == 0) return "";
  json m = json::object();
  static const char* const kLangs[] = {"en", "de", "fr", "es"};
  static const char* const kTags[] = {"a", "b", "c", "d", "e"};
  static const char* const kDates[] = {"2020-01-01", "2021-06-30T12:00:00Z", "2022-03-01T00:00:00+02:00",
                                       "2023-12-31T23:59:59Z", "not a date"};
  if (rng() % 4 != 0) m["year"] = 2015 + static_cast<int>(rng() % 10);
  if (rng() % 4 != 0) m["lang"] = kLangs[rng() % 4];
  if (rng() % 3 != 0) {
    json t = json::array();
    for (size_t i = rng() % 4; i > 0; --i) t.push_back(kTags[rng() % 5]);
    m["tags"] = t;
  }
  if (rng() % 3 == 0) m["open"] = rng() % 2 == 0;
  if (rng() % 3 == 0) m["date"] = kDates[rng() % 5];
  if (rng() % 5 == 0) m["score"] = (rng() % 100) / 10.0;
  if (rng() % 7 == 0) m["year"] = "2019";  // a string where others have numbers
  return check_metadata(m.dump());
}

json random_leaf(std::mt19937& rng) {
  switch (rng() % 12) {
    case 0: return {{"year", {{"$gte", 2015 + static_cast<int>(rng() % 10)}}}};
    case 1: return {{"year", {{"$lt", 2020}}}};
    case 2: return {{"lang", rng() % 2 ? json("en") : json({{"$ne", "de"}})}};
    case 3: return {{"lang", {{"$in", {"en", "fr"}}}}};
    case 4: return {{"tags", {{"$nin", {"a", "b"}}}}};
    case 5: return {{"tags", "c"}};
    case 6: return {{"open", {{"$exists", rng() % 2 == 0}}}};
    case 7: return {{"date", {{"$gt", "2021-06-30T12:00:00Z"}}}};
    case 8: return {{"date", {{"$lte", "2022-03-01"}}}};
    case 9: return {{"date", "2022-02-28T22:00:00Z"}};  // the same instant as one stored with an offset
    case 10: return {{"score", {{"$gt", 3.5}, {"$lte", 8}}}};
    default: return {{"year", {{"$not", {{"$in", {2016, 2018, "2019"}}}}}}};
  }
}

json random_filter(std::mt19937& rng, int depth = 0) {
  const unsigned pick = depth > 2 ? 0 : rng() % 5;
  if (pick <= 1) return random_leaf(rng);
  if (pick == 4) return {{"$not", random_filter(rng, depth + 1)}};
  json list = json::array();
  for (size_t i = 1 + rng() % 3; i > 0; --i) list.push_back(random_filter(rng, depth + 1));
  return {{pick == 2 ? "$and" : "$or", list}};
}

struct Logs {
  std::string dir;
  std::vector<Document> docs;
  std::shared_ptr<const RecordLogReader> meta;
  LogState meta_state;
};

Logs write_metadata(size_t n, uint32_t seed) {
  Logs l;
  l.dir = sieve::test::make_temp_dir("doc_state");
  std::mt19937 rng(seed);
  RecordLogWriter w = RecordLogWriter::create(l.dir, "metadata", "META", 1);
  for (size_t i = 0; i < n; ++i) {
    Document d;
    d.metadata = random_metadata(rng);
    d.expires_at = rng() % 6 == 0 ? 1000.0 + static_cast<double>(rng() % 100) : 0.0;
    const std::string r = encode_metadata_record(d);
    w.append(r.data(), r.size());
    l.docs.push_back(d);
  }
  l.meta_state = w.sync();
  l.meta = std::make_shared<const RecordLogReader>(l.dir, "metadata", "META", 1, l.meta_state);
  return l;
}

}  // namespace

TEST(Bitmap, SetOperationsAgreeWithAVectorOfBools) {
  std::mt19937 rng(3);
  for (size_t n : {0u, 1u, 63u, 64u, 65u, 200u}) {
    Bitmap a(n), b(n, true);
    std::vector<bool> ra(n, false), rb(n, true);
    for (size_t i = 0; i < n; ++i) {
      if (rng() % 2) a.set(i), ra[i] = true;
      if (rng() % 3 == 0) b.reset(i), rb[i] = false;
    }
    auto check = [&](const Bitmap& x, const std::vector<bool>& r) {
      ASSERT_EQ(x.size(), r.size());
      size_t c = 0;
      std::vector<uint32_t> ones;
      for (size_t i = 0; i < n; ++i) {
        ASSERT_EQ(x.test(i), r[i]) << i;
        if (r[i]) ++c, ones.push_back(static_cast<uint32_t>(i));
        // The byte view FAISS's IDSelectorBitmap reads.
        ASSERT_EQ((x.bytes()[i >> 3] >> (i & 7)) & 1, r[i] ? 1 : 0);
      }
      EXPECT_EQ(x.count(), c);
      EXPECT_EQ(x.ones(), ones);
      for (size_t first : {size_t{1}, size_t{63}, size_t{64}, size_t{65}, n}) {  // ones(first): the bits from `first`
        std::vector<uint32_t> from;
        for (uint32_t i : ones)
          if (i >= first) from.push_back(i);
        EXPECT_EQ(x.ones(first), from) << first;
      }
    };
    Bitmap x = a;
    x.and_with(b);
    std::vector<bool> r(n);
    for (size_t i = 0; i < n; ++i) r[i] = ra[i] && rb[i];
    check(x, r);
    x = a, x.or_with(b);
    for (size_t i = 0; i < n; ++i) r[i] = ra[i] || rb[i];
    check(x, r);
    x = a, x.and_not(b);
    for (size_t i = 0; i < n; ++i) r[i] = ra[i] && !rb[i];
    check(x, r);
    x = a, x.flip();
    for (size_t i = 0; i < n; ++i) r[i] = !ra[i];
    check(x, r);  // no bit past size() is set by the flip (count would see it)
    x.resize(n + 70);
    r.resize(n + 70, false);
    for (size_t i = n; i < n + 70; ++i) ASSERT_FALSE(x.test(i));
  }
}

// 600 documents, 300 random filters: the columns' answer equals Filter::matches on each
// document's JSON, for every document.
TEST(DocState, FilterOverColumnsEqualsMatchingEachDocument) {
  const Logs l = write_metadata(600, 11);
  DocState st(l.docs.size(), l.meta, nullptr);
  std::mt19937 rng(5);
  size_t nonempty = 0, partial = 0;
  // Each filter is asked again later, sometimes still in the state's cache of recent filters
  // (16), sometimes pushed out of it: both answers are checked the same way.
  std::vector<std::string> texts;
  for (int t = 0; t < 300; ++t) texts.push_back(random_filter(rng).dump());
  for (int t = 0; t < 600; ++t) {
    const std::string& text = texts[t % 2 == 0 ? t / 2 : (t / 2) - (t / 2) % 24];
    const Filter f = Filter::parse(text);
    const auto allowed = st.allowed(f, 1.0);  // before any expiry
    ASSERT_NE(allowed, nullptr);
    size_t pass = 0;
    for (size_t d = 0; d < l.docs.size(); ++d) {
      const bool want = f.matches(l.docs[d].metadata);
      ASSERT_EQ(allowed->test(d), want) << text << " on document " << d << ": " << l.docs[d].metadata;
      pass += want;
    }
    nonempty += pass > 0;
    partial += pass > 0 && pass < l.docs.size();
  }
  EXPECT_GT(partial, 300u);  // the filters are not trivially all or nothing
  EXPECT_EQ(st.matching(Filter::parse(R"({"lang": "en"})"), 1.0).size(),
            static_cast<size_t>(std::count_if(l.docs.begin(), l.docs.end(), [](const Document& d) {
              return Filter::parse(R"({"lang": "en"})").matches(d.metadata);
            })));
  (void)nonempty;
}

// Deleted documents and documents expired at `now` are out of every answer; with neither and no
// filter, allowed() is null (search takes its plain path).
TEST(DocState, DeletionsAndExpiryTakeDocumentsOut) {
  const Logs l = write_metadata(300, 12);
  EXPECT_EQ(DocState(300, nullptr, nullptr).allowed(Filter(), 0), nullptr);
  EXPECT_EQ(DocState(l.docs.size(), l.meta, nullptr).allowed(Filter(), 999.0), nullptr);  // nothing expired yet
  RecordLogWriter w = RecordLogWriter::create(l.dir, "deletes", "DELS", 4);
  for (const auto& batch : {std::vector<uint32_t>{3, 7, 250}, std::vector<uint32_t>{0, 299}}) {
    const std::string r = encode_delete_record(batch);
    w.append(r.data(), r.size());
  }
  const LogState ds = w.sync();
  RecordLogReader dels(l.dir, "deletes", "DELS", 4, ds);
  DocState st(l.docs.size(), l.meta, &dels);
  EXPECT_EQ(st.deleted_count(), 5u);
  const double now = 1050.0;
  const auto a = st.allowed(Filter(), now);
  ASSERT_NE(a, nullptr);
  for (uint32_t d = 0; d < l.docs.size(); ++d) {
    const bool deleted = d == 3 || d == 7 || d == 250 || d == 0 || d == 299;
    const bool expired = l.docs[d].expires_at != 0 && l.docs[d].expires_at <= now;
    EXPECT_EQ(a->test(d), !deleted && !expired) << d;
    EXPECT_EQ(st.live(d, now), !deleted && !expired) << d;
    EXPECT_EQ(st.expired(d, now), expired) << d;
  }
  // A filter combines with both.
  const Filter f = Filter::parse(R"({"lang": {"$in": ["en", "de"]}})");
  for (double at : {now, now, 0.0}) {  // again (the filter's bitmap cached), and at another clock
    const auto b = st.allowed(f, at);
    const auto live = st.allowed(Filter(), at);
    for (uint32_t d = 0; d < l.docs.size(); ++d)
      EXPECT_EQ(b->test(d), live->test(d) && f.matches(l.docs[d].metadata)) << d << " at " << at;
  }
}

// A state extended by later records (an add, then a delete) answers as one read from scratch.
TEST(DocState, ExtendedEqualsReadAtOnce) {
  const Logs all = write_metadata(400, 13);
  RecordLogWriter w = RecordLogWriter::create(all.dir, "part", "META", 1);
  std::shared_ptr<const DocState> st;
  for (size_t n : {100u, 101u, 250u, 400u}) {
    for (size_t d = st ? st->documents() : 0; d < n; ++d) {
      const std::string r = encode_metadata_record(all.docs[d]);
      w.append(r.data(), r.size());
    }
    auto log = std::make_shared<const RecordLogReader>(all.dir, "part", "META", 1, w.sync());
    st = st ? std::make_shared<const DocState>(*st, n, log, nullptr) : std::make_shared<const DocState>(n, log, nullptr);
  }
  DocState fresh(400, all.meta, nullptr);
  std::mt19937 rng(9);
  for (int t = 0; t < 60; ++t) {
    const Filter f = Filter::parse(random_filter(rng).dump());
    EXPECT_EQ(st->matching(f, 1050.0), fresh.matching(f, 1050.0)) << f.to_json();
  }
}

// Expiry from what a write gives: an RFC 3339 instant, seconds since 1970, or a TTL from now.
TEST(DocState, ExpiryInstantReadsDatesSecondsAndTtl) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(expiry_instant("", nan, 5), 0.0);
  EXPECT_EQ(expiry_instant("1970-01-02T00:00:00Z", nan, 5), 86400.0);
  EXPECT_EQ(expiry_instant("1700000000", nan, 5), 1700000000.0);
  EXPECT_EQ(expiry_instant("0799-11-14T09:24:32Z", nan, 5), 1.0);  // before 1970: expired already
  EXPECT_EQ(expiry_instant("", 60, 1000), 1060.0);
  EXPECT_GT(expiry_instant("5e-324", nan, 5), 0.0);  // a denormal is a (tiny) number of seconds
  EXPECT_THROW(expiry_instant("tomorrow", nan, 5), Error);
  EXPECT_THROW(expiry_instant("", -1, 5), Error);
  EXPECT_THROW(expiry_instant("1700000000", 60, 5), Error);
}
