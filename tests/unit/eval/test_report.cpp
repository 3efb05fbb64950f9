// Report output against text written out by hand: Markdown tables, number formatting, and the two
// SVG plots (well-formed XML, one bar per value, escaped text, bar and step heights from the layout).
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "eval/report.h"
#include "sieve/error.h"

namespace sieve::eval {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

size_t count(const std::string& haystack, const std::string& needle) {
  size_t n = 0;
  for (size_t pos = haystack.find(needle); pos != std::string::npos; pos = haystack.find(needle, pos + 1))
    ++n;
  return n;
}

// True when every '&' in `text` starts one of the five predefined entities.
bool entities_ok(const std::string& text) {
  for (size_t pos = text.find('&'); pos != std::string::npos; pos = text.find('&', pos + 1)) {
    bool ok = false;
    for (const char* e : {"&amp;", "&lt;", "&gt;", "&quot;", "&apos;"})
      ok |= text.compare(pos, strlen(e), e) == 0;
    if (!ok) return false;
  }
  return true;
}

// A minimal XML checker for what the SVG writers emit: an optional <?xml ...?> declaration, then
// one root element; tags closed in order; attributes as name="value"; no raw '<' or stray '&' in
// text or values. Returns "" when the document passes, else the first problem found.
std::string xml_problem(const std::string& doc) {
  std::vector<std::string> open;
  bool root_seen = false;
  size_t i = 0;
  if (doc.compare(0, 5, "<?xml") == 0) {
    i = doc.find("?>");
    if (i == std::string::npos) return "unterminated declaration";
    i += 2;
  }
  while (i < doc.size()) {
    if (doc[i] != '<') {
      const size_t next = std::min(doc.find('<', i), doc.size());
      const std::string text = doc.substr(i, next - i);
      if (!entities_ok(text) || text.find('>') != std::string::npos) return "bad text: " + text;
      if (open.empty() && text.find_first_not_of(" \n") != std::string::npos) return "text outside the root";
      i = next;
      continue;
    }
    if (doc.compare(i, 2, "</") == 0) {
      const size_t end = doc.find('>', i);
      if (end == std::string::npos) return "unterminated end tag";
      const std::string name = doc.substr(i + 2, end - i - 2);
      if (open.empty() || open.back() != name) return "unbalanced </" + name + ">";
      open.pop_back();
      i = end + 1;
      continue;
    }
    size_t j = i + 1;
    while (j < doc.size() && (std::isalnum(static_cast<unsigned char>(doc[j])) || doc[j] == '-')) ++j;
    const std::string name = doc.substr(i + 1, j - i - 1);
    if (name.empty()) return "empty tag name";
    while (true) {  // attributes
      while (j < doc.size() && doc[j] == ' ') ++j;
      if (doc.compare(j, 2, "/>") == 0 || doc.compare(j, 1, ">") == 0) break;
      const size_t eq = doc.find('=', j);
      if (eq == std::string::npos || doc.compare(eq, 2, "=\"") != 0) return "unquoted attribute in <" + name;
      const size_t close = doc.find('"', eq + 2);
      if (close == std::string::npos) return "unterminated attribute in <" + name;
      const std::string value = doc.substr(eq + 2, close - eq - 2);
      if (value.find('<') != std::string::npos || !entities_ok(value)) return "bad attribute value: " + value;
      j = close + 1;
    }
    if (open.empty()) {
      if (root_seen) return "second root element <" + name;
      root_seen = true;
    }
    if (doc[j] == '>') {
      open.push_back(name);
      i = j + 1;
    } else {
      i = j + 2;
    }
  }
  if (!open.empty()) return "unclosed <" + open.back() + ">";
  return root_seen ? "" : "no root element";
}

TEST(SvgXmlChecker, RejectsBrokenDocuments) {  // the checker itself, so that a pass means something
  EXPECT_EQ(xml_problem("<svg><g><rect x=\"1\"/></g></svg>\n"), "");
  EXPECT_NE(xml_problem("<svg><g></svg></g>"), "");
  EXPECT_NE(xml_problem("<svg><text>a & b</text></svg>"), "");
  EXPECT_NE(xml_problem("<svg><text>a < b</text></svg>"), "");
  EXPECT_NE(xml_problem("<svg x=1></svg>"), "");
  EXPECT_NE(xml_problem("<svg/><svg/>"), "");
  EXPECT_NE(xml_problem("<svg>"), "");
}

// ---- Markdown ----

TEST(MarkdownTable, ExactTextWithAlignmentAndEscaping) {
  MarkdownTable t({"method", "nDCG@10", "note"});
  t.add_row({"bm25", "0.348", "a|b"});
  t.add_row({"dense", "0.412 \u00b1 0.010", "x"});
  // Widths: method 6, nDCG@10 13 ("±" is one character), note 4 ("a\|b"). Numbers pad on the left.
  EXPECT_EQ(t.str(),
            "| method |       nDCG@10 | note |\n"
            "| ------ | ------------: | ---- |\n"
            "| bm25   |         0.348 | a\\|b |\n"
            "| dense  | 0.412 \u00b1 0.010 | x    |\n");
}

TEST(MarkdownTable, NumericColumnDetection) {
  MarkdownTable t({"a", "b", "c", "d", "e"});
  t.add_row({"+0.5", "12%", "1.2.3", "", "1e-3"});
  t.add_row({"-3", "n/a", "4", "", "2"});
  t.add_row({"n/a", "", "5", "", "3"});
  // a, b: numbers with "n/a" or empty gaps -> right; c: "1.2.3" is a version, not a number; d: all
  // empty -> left; e: exponents are not in the accepted grammar -> left. Minimum widths 4 / 3;
  // headers align with their column.
  EXPECT_EQ(t.str(),
            "|    a |    b | c     | d   | e    |\n"
            "| ---: | ---: | ----- | --- | ---- |\n"
            "| +0.5 |  12% | 1.2.3 |     | 1e-3 |\n"
            "|   -3 |  n/a | 4     |     | 2    |\n"
            "|  n/a |      | 5     |     | 3    |\n");
}

TEST(MarkdownTable, NewlinesBecomeSpacesAndNoRowsIsLeftAligned) {
  MarkdownTable t({"x|y", "two\nlines"});
  EXPECT_EQ(t.str(),
            "| x\\|y | two lines |\n"
            "| ---- | --------- |\n");
}

TEST(MarkdownTable, RowWidthMismatchThrows) {
  MarkdownTable t({"a", "b"});
  EXPECT_THROW(t.add_row({"1"}), sieve::Error);
  EXPECT_THROW(t.add_row({"1", "2", "3"}), sieve::Error);
  EXPECT_THROW(MarkdownTable{std::vector<std::string>{}}, sieve::Error);
  t.add_row({"1", "2"});  // the table is still usable after a rejected row
  EXPECT_EQ(t.str(), "|    a |    b |\n| ---: | ---: |\n|    1 |    2 |\n");
}

// ---- number formatting ----

TEST(Fmt, Num) {
  EXPECT_EQ(fmt_num(0.34849), "0.348");
  EXPECT_EQ(fmt_num(0.3486), "0.349");
  EXPECT_EQ(fmt_num(1234.5678, 2), "1234.57");
  EXPECT_EQ(fmt_num(7, 0), "7");
  EXPECT_EQ(fmt_num(-1.25, 1), "-1.2");  // -1.25 is exact in binary: ties go to even
  EXPECT_EQ(fmt_num(-1.26, 1), "-1.3");
  EXPECT_EQ(fmt_num(kNaN), "n/a");
  EXPECT_EQ(fmt_num(std::numeric_limits<double>::infinity()), "inf");
  // Values that round to zero lose their minus sign.
  EXPECT_EQ(fmt_num(-0.0), "0.000");
  EXPECT_EQ(fmt_num(-0.0004), "0.000");
  EXPECT_EQ(fmt_num(-0.0006), "-0.001");
  EXPECT_THROW(fmt_num(1.0, -1), sieve::Error);
}

TEST(Fmt, Signed) {
  EXPECT_EQ(fmt_signed(0.012), "+0.012");
  EXPECT_EQ(fmt_signed(-0.04), "-0.040");
  EXPECT_EQ(fmt_signed(0.0), "+0.000");
  EXPECT_EQ(fmt_signed(-0.0), "+0.000");
  EXPECT_EQ(fmt_signed(-0.0004), "+0.000");
  EXPECT_EQ(fmt_signed(2.5, 1), "+2.5");
  EXPECT_EQ(fmt_signed(kNaN), "n/a");
}

TEST(Fmt, MeanStd) {
  EXPECT_EQ(fmt_mean_std({0.348, 0.012, 5}), "0.348 \u00b1 0.012");
  EXPECT_EQ(fmt_mean_std({0.348, 0.0, 3}, 2), "0.35 \u00b1 0.00");
  EXPECT_EQ(fmt_mean_std({0.348, 0.0, 1}), "0.348");  // one seed: no spread to show
  EXPECT_EQ(fmt_mean_std({0.348, kNaN, 4}), "0.348");
  EXPECT_EQ(fmt_mean_std({kNaN, kNaN, 0}), "n/a");
}

TEST(Fmt, XmlEscape) {
  EXPECT_EQ(xml_escape("a<b & \"c\" > d"), "a&lt;b &amp; &quot;c&quot; &gt; d");
  EXPECT_EQ(xml_escape("plain \u00b1"), "plain \u00b1");
}

// ---- SVG ----
// Layout from report.cpp: plot area x in [70, 550], y in [40, 340] (y grows downwards).

TEST(SvgBarChart, WellFormedWithOneBarPerValueEscapedTextAndErrorBars) {
  const std::vector<std::string> groups = {"scifact", "R&D <v2>"};
  const std::vector<BarSeries> series = {
      {"bm25", {0.5, 1.0}, {0.1, 0.05}},
      {"A & B \"dense\"", {kNaN, 0.25}, {}},
      {"c", {0.3, 0.4}, {0.02, kNaN}},
  };
  const std::string svg = svg_bar_chart("Recall <@100> & more", groups, series, "nDCG@10");
  EXPECT_EQ(xml_problem(svg), "");
  EXPECT_EQ(count(svg, "<rect class=\"bar\""), 5u);  // six values, one NaN
  EXPECT_EQ(count(svg, "class=\"err\""), 3u);        // errors given and not NaN, on a drawn bar
  EXPECT_EQ(count(svg, "<rect class=\"swatch\""), 3u);
  EXPECT_NE(svg.find(">Recall &lt;@100&gt; &amp; more</text>"), std::string::npos);
  EXPECT_NE(svg.find(">A &amp; B &quot;dense&quot;</text>"), std::string::npos);
  EXPECT_NE(svg.find(">R&amp;D &lt;v2&gt;</text>"), std::string::npos);
  EXPECT_NE(svg.find(">nDCG@10</text>"), std::string::npos);
  EXPECT_EQ(svg.find("R&D"), std::string::npos);
}

TEST(SvgBarChart, BarGeometryAndNiceTicks) {
  // Data range [-0.5, 1]: 1.5 / 5 = 0.3 rounds up to a step of 0.5, so the axis is exactly
  // [-0.5, 1] and y(v) = 340 - (v + 0.5) / 1.5 * 300: y(1) = 40, y(0) = 240, y(-0.5) = 340.
  // One group 480 wide, bars 0.8 * 480 / 2 = 192 wide starting 48 in: x = 118 and 310.
  const std::string svg = svg_bar_chart("t", {"g"}, {{"pos", {1.0}, {}}, {"neg", {-0.5}, {}}}, "y");
  EXPECT_EQ(xml_problem(svg), "");
  EXPECT_NE(svg.find("<rect class=\"bar\" x=\"118\" y=\"40\" width=\"192\" height=\"200\""),
            std::string::npos);
  EXPECT_NE(svg.find("<rect class=\"bar\" x=\"310\" y=\"240\" width=\"192\" height=\"100\""),
            std::string::npos);
  for (const char* tick : {">-0.5</text>", ">0.0</text>", ">0.5</text>", ">1.0</text>"})
    EXPECT_EQ(count(svg, tick), 1u) << tick;
  EXPECT_EQ(svg.find(">1.5</text>"), std::string::npos);
  EXPECT_EQ(count(svg, "class=\"err\""), 0u);
}

TEST(SvgBarChart, ErrorBarsWidenTheAxis) {
  // 1 + 0.3 = 1.3 exceeds the value range: step 0.5 (1.3 / 5 = 0.26 -> 0.5), axis [0, 1.5];
  // y(v) = 340 - v / 1.5 * 300, so the whisker runs from y(0.7) = 200 to y(1.3) = 80.
  const std::string svg = svg_bar_chart("t", {"g"}, {{"s", {1.0}, {0.3}}}, "y");
  EXPECT_NE(svg.find(">1.5</text>"), std::string::npos);
  EXPECT_NE(svg.find("<path class=\"err\" d=\"M310 200 V80 "), std::string::npos);  // bar x 118 + 384 / 2
}

TEST(SvgBarChart, SizeMismatchThrows) {
  EXPECT_THROW(svg_bar_chart("t", {"a", "b"}, {{"s", {1.0}, {}}}, "y"), sieve::Error);
  EXPECT_THROW(svg_bar_chart("t", {"a", "b"}, {{"s", {1.0, 2.0}, {0.1}}}, "y"), sieve::Error);
  EXPECT_THROW(svg_bar_chart("t", {"a"}, {{"s", {std::numeric_limits<double>::infinity()}, {}}}, "y"),
               sieve::Error);
  EXPECT_THROW(svg_bar_chart("t", {"a"}, {{"s", {1.0}, {-0.1}}}, "y"), sieve::Error);
}

TEST(SvgBarChart, EmptyInputsStillGiveAValidDocument) {
  EXPECT_EQ(xml_problem(svg_bar_chart("t", {}, {}, "y")), "");
  EXPECT_EQ(xml_problem(svg_bar_chart("t", {"a"}, {{"all NaN", {kNaN}, {}}}, "y")), "");
}

TEST(SvgScatter, OnePointPerFiniteValueAtItsCoordinates) {
  // x data [0.5, 1]: step 0.1, axis [0.5, 1], x(v) = 70 + (v - 0.5) / 0.5 * 480: x(0.5) = 70,
  // x(0.75) = 310, x(1) = 550. y data [0, 0.5]: step 0.1, y(v) = 340 - v / 0.5 * 300.
  const std::vector<ScatterSeries> series = {{"Model <A>", {0.5, 1.0, kNaN}, {0.0, 0.5, 0.2}, {"s1", "s2", "s3"}},
                                             {"B", {0.75}, {0.25}, {}}};
  const std::string svg = svg_scatter("AUC & nDCG", series, "AUC", "nDCG@10");
  EXPECT_EQ(xml_problem(svg), "");
  EXPECT_EQ(count(svg, "<circle class=\"point\""), 3u);
  EXPECT_NE(svg.find("<circle class=\"point\" cx=\"70\" cy=\"340\""), std::string::npos);
  EXPECT_NE(svg.find("<circle class=\"point\" cx=\"550\" cy=\"40\""), std::string::npos);
  EXPECT_NE(svg.find("<circle class=\"point\" cx=\"310\" cy=\"190\""), std::string::npos);
  EXPECT_NE(svg.find("Model &lt;A&gt; s2: (1.000, 0.500)"), std::string::npos);
  EXPECT_NE(svg.find(">AUC &amp; nDCG</text>"), std::string::npos);
  EXPECT_THROW(svg_scatter("t", {{"s", {1.0}, {}, {}}}, "x", "y"), sieve::Error);
  EXPECT_THROW(svg_scatter("t", {{"s", {1.0}, {1.0}, {"a", "b"}}}, "x", "y"), sieve::Error);
  EXPECT_EQ(xml_problem(svg_scatter("t", {}, "x", "y")), "");
}

Histogram hist(double lo, double hi, std::vector<size_t> counts) {
  Histogram h;
  h.lo = lo;
  h.hi = hi;
  h.counts = std::move(counts);
  return h;
}

TEST(SvgHistograms, StepHeightsAreFractionsPerBin) {
  // "one" has all 4 values in bin 1 (fraction 1), "x<y" has 1 value in each of bins 0 and 1 (0.5).
  // The y axis is [0, 1] (step 0.2): y(1) = 40, the top of the plot area; y(0.5) = 190; y(0) = 340.
  // Bin edges 0, 0.25, .., 1 map to x = 70, 190, 310, 430, 550.
  const std::string svg = svg_histograms(
      "scores & more", {{"one", hist(0, 1, {0, 4, 0, 0})}, {"x<y", hist(0, 1, {1, 1, 0, 0})}}, "cosine");
  EXPECT_EQ(xml_problem(svg), "");
  EXPECT_NE(svg.find("d=\"M70 340 V340 H190 V40 H310 V340 H430 V340 H550 V340\""), std::string::npos);
  EXPECT_NE(svg.find("d=\"M70 340 V190 H190 V190 H310 V340 H430 V340 H550 V340\""), std::string::npos);
  EXPECT_EQ(count(svg, "<path class=\"hist\""), 2u);
  EXPECT_EQ(count(svg, "<line class=\"swatch\""), 2u);
  EXPECT_NE(svg.find(">x&lt;y</text>"), std::string::npos);
  EXPECT_NE(svg.find(">scores &amp; more</text>"), std::string::npos);
  EXPECT_NE(svg.find(">cosine</text>"), std::string::npos);
  for (const char* tick : {">0.0</text>", ">0.2</text>", ">1.0</text>"})
    EXPECT_NE(svg.find(tick), std::string::npos);
}

TEST(SvgHistograms, MismatchedBinsThrow) {
  const Histogram h = hist(0, 1, {1, 2});
  EXPECT_THROW(svg_histograms("t", {{"a", h}, {"b", hist(0, 1, {1, 2, 3})}}, "x"), sieve::Error);
  EXPECT_THROW(svg_histograms("t", {{"a", h}, {"b", hist(0, 2, {1, 2})}}, "x"), sieve::Error);
  EXPECT_THROW(svg_histograms("t", {{"a", h}, {"b", hist(-1, 1, {1, 2})}}, "x"), sieve::Error);
  EXPECT_THROW(svg_histograms("t", {}, "x"), sieve::Error);
  EXPECT_THROW(svg_histograms("t", {{"a", hist(0, 1, {})}}, "x"), sieve::Error);
  EXPECT_EQ(xml_problem(svg_histograms("t", {{"empty", hist(0, 1, {0, 0})}}, "x")), "");
}

}  // namespace
}  // namespace sieve::eval
