// Report output for experiments: Markdown tables and small self-contained SVG plots (no external
// tools). Output is deterministic (fixed number formatting), so reports can be diffed.
#pragma once

#include <string>
#include <vector>

#include "eval/stats.h"

namespace sieve::eval {

/// A Markdown (GitHub) table. Columns whose every non-empty cell parses as a number (a leading
/// sign, digits, '.', and an optional " ± x" or "%") are right-aligned; others left-aligned.
class MarkdownTable {
 public:
  explicit MarkdownTable(std::vector<std::string> header);
  /// Adds a row; throws sieve::Error when its width differs from the header's. '|' in a cell is
  /// escaped as "\|" and newlines become spaces.
  void add_row(std::vector<std::string> cells);
  std::string str() const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

/// "0.348" with `decimals` digits; "n/a" for NaN.
std::string fmt_num(double v, int decimals = 3);
/// "0.348 ± 0.012"; just fmt_num(mean) when std is NaN or n <= 1.
std::string fmt_mean_std(const MeanStd& v, int decimals = 3);
/// "+0.012" / "-0.040" (always signed), "n/a" for NaN.
std::string fmt_signed(double v, int decimals = 3);

/// One bar series of a grouped bar chart: one value (and optional error bar) per group.
struct BarSeries {
  std::string name;
  std::vector<double> values;
  std::vector<double> errors;  ///< empty, or one half-height error bar per group
};

/// A grouped bar chart as a standalone SVG document: groups along x, one bar per series in each
/// group, a y axis with ticks spanning min(0, min value) to max value, a legend, the title on top.
/// NaN values draw no bar. Throws sieve::Error when a series' size differs from groups'.
std::string svg_bar_chart(const std::string& title, const std::vector<std::string>& groups,
                          const std::vector<BarSeries>& series, const std::string& y_label);

/// Overlaid histograms (outlined steps, one colour each, with a legend) as a standalone SVG;
/// all must share lo, hi and bin count (else sieve::Error). The y axis is the fraction of each
/// histogram's values per bin, so sets of different sizes compare.
std::string svg_histograms(const std::string& title, const std::vector<std::pair<std::string, Histogram>>& hists,
                           const std::string& x_label);

/// One series of a scatter plot: points (x[i], y[i]), each with an optional label shown on hover.
struct ScatterSeries {
  std::string name;
  std::vector<double> x, y;
  std::vector<std::string> labels;  ///< empty, or one per point
};

/// A scatter plot (one colour per series, with a legend) as a standalone SVG; both axes span the
/// data with round ticks. NaN points are left out. Throws sieve::Error when x and y differ in size.
std::string svg_scatter(const std::string& title, const std::vector<ScatterSeries>& series,
                        const std::string& x_label, const std::string& y_label);

/// Escapes &, <, >, " for XML text and attributes.
std::string xml_escape(const std::string& s);

}  // namespace sieve::eval
