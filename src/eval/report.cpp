// Markdown tables, number formatting and two small standalone SVG plots for experiment reports.
// Choices the header leaves open:
//  - Numbers go through std::to_chars, which ignores the C locale, so a report is byte-identical
//    wherever it is produced. A value that rounds to zero prints without a minus ("0.000"; and
//    fmt_signed gives "+0.000"), so -0.0 or -0.0001 never shows up as a puzzling "-0.000".
//  - A Markdown column of numbers stays right-aligned when some cells are "n/a" (fmt_* of NaN).
//  - The bar chart's y range also covers the error bars, so whiskers never leave the plot.
#include "eval/report.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <sstream>

#include "sieve/error.h"

namespace sieve::eval {
namespace {

// Okabe-Ito colours: distinguishable under the common kinds of colour blindness.
const char* const kPalette[] = {"#0072B2", "#E69F00", "#009E73", "#D55E00",
                                "#CC79A7", "#56B4E9", "#F0E442", "#000000"};
const char* colour(size_t i) { return kPalette[i % 8]; }

// Layout of both plots in pixels: the plot area spans x in [kLeft, kPlotRight] and y in
// [kTop, kPlotBottom]; the legend sits in the right margin, the title above.
constexpr double kWidth = 720, kHeight = 400, kLeft = 70, kTop = 40;
constexpr double kPlotRight = kWidth - 170, kPlotBottom = kHeight - 60;

std::string fixed(double v, int decimals) {
  SIEVE_THROW_IF_NOT(decimals >= 0 && decimals <= 17, "decimals must be in [0, 17], got " << decimals);
  char buf[400];  // DBL_MAX has 309 integer digits
  const auto res = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed, decimals);
  SIEVE_ASSERT(res.ec == std::errc());
  std::string s(buf, res.ptr);
  if (s[0] == '-' && s.find_first_not_of("0.", 1) == std::string::npos) s.erase(0, 1);
  return s;
}

// SVG coordinates: two decimals at most, trailing zeros dropped ("40", "12.5").
std::string coord(double v) {
  std::string s = fixed(v, 2);
  s.erase(s.find_last_not_of('0') + 1);
  if (s.back() == '.') s.pop_back();
  return s;
}

// Reads an unsigned decimal (digits with at most one '.') at s[i]; true when it had a digit.
bool read_unsigned(const std::string& s, size_t& i) {
  size_t digits = 0;
  bool dot = false;
  for (; i < s.size(); ++i) {
    if (std::isdigit(static_cast<unsigned char>(s[i]))) {
      ++digits;
    } else if (s[i] == '.' && !dot) {
      dot = true;
    } else {
      break;
    }
  }
  return digits > 0;
}

// "12", "-0.5", "+1.25", "3.5%", "0.348 ± 0.012" (what fmt_* and percentages produce).
bool is_number(const std::string& s) {
  static const std::string kPlusMinus = " \u00b1 ";
  size_t i = (!s.empty() && (s[0] == '+' || s[0] == '-')) ? 1 : 0;
  if (!read_unsigned(s, i)) return false;
  if (s.compare(i, kPlusMinus.size(), kPlusMinus) == 0) {
    i += kPlusMinus.size();
    if (!read_unsigned(s, i)) return false;
  }
  if (i < s.size() && s[i] == '%') ++i;
  return i == s.size();
}

std::string escape_cell(std::string s) {
  std::string out;
  for (char c : s) {
    if (c == '|')
      out += "\\|";
    else
      out += (c == '\n' || c == '\r') ? ' ' : c;
  }
  return out;
}

// Display width for padding: UTF-8 code points, so "±" counts once.
size_t text_width(const std::string& s) {
  return static_cast<size_t>(std::count_if(
      s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

// A value axis with round tick steps (1, 2 or 5 times a power of ten, about five intervals),
// widened to whole steps around [lo, hi].
struct Axis {
  double lo, hi, step;
  int decimals;  // enough to tell the tick labels apart
  double y(double v) const { return kPlotBottom - (v - lo) / (hi - lo) * (kPlotBottom - kTop); }
};

Axis nice_axis(double lo, double hi) {
  if (!(hi > lo)) hi = lo + 1;  // flat or empty data still gets a usable axis
  const double raw = (hi - lo) / 5;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double norm = raw / mag;
  const double mult = norm <= 1 + 1e-9 ? 1 : norm <= 2 + 1e-9 ? 2 : norm <= 5 + 1e-9 ? 5 : 10;
  Axis a;
  a.step = mult * mag;
  // The small slack keeps 1.0 / 0.2 = 5.000000001 from adding a whole empty step.
  a.lo = std::floor(lo / a.step + 1e-9) * a.step;
  a.hi = std::ceil(hi / a.step - 1e-9) * a.step;
  a.decimals = std::max(0, -static_cast<int>(std::floor(std::log10(a.step) + 1e-9)));
  return a;
}

void open_svg(std::ostream& o, const std::string& title) {
  o << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << kWidth << "\" height=\"" << kHeight
    << "\" viewBox=\"0 0 " << kWidth << ' ' << kHeight << "\" font-family=\"sans-serif\" font-size=\"12\">\n"
    << "<rect class=\"bg\" width=\"" << kWidth << "\" height=\"" << kHeight << "\" fill=\"white\"/>\n"
    << "<text x=\"" << coord(kWidth / 2) << "\" y=\"24\" text-anchor=\"middle\" font-size=\"16\">"
    << xml_escape(title) << "</text>\n";
}

// Grid lines with labelled ticks, the axis line and the rotated axis label.
void draw_y_axis(std::ostream& o, const Axis& a, const std::string& label) {
  const long first = std::lround(a.lo / a.step), last = std::lround(a.hi / a.step);
  for (long k = first; k <= last; ++k) {
    const std::string y = coord(a.y(k * a.step));
    o << "<line x1=\"" << coord(kLeft) << "\" y1=\"" << y << "\" x2=\"" << coord(kPlotRight) << "\" y2=\""
      << y << "\" stroke=\"#e0e0e0\"/>\n"
      << "<text x=\"" << coord(kLeft - 6) << "\" y=\"" << coord(a.y(k * a.step) + 4)
      << "\" text-anchor=\"end\">" << fixed(k * a.step, a.decimals) << "</text>\n";
  }
  o << "<line x1=\"" << coord(kLeft) << "\" y1=\"" << coord(kTop) << "\" x2=\"" << coord(kLeft) << "\" y2=\""
    << coord(kPlotBottom) << "\" stroke=\"black\"/>\n"
    << "<text transform=\"translate(16 " << coord((kTop + kPlotBottom) / 2)
    << ") rotate(-90)\" text-anchor=\"middle\">" << xml_escape(label) << "</text>\n";
}

// Filled swatches for bars, short lines for outlined histograms.
// Ticks at round values inside [lo, hi], an x axis spanning exactly [lo, hi] over the plot's
// width, and its label.
void draw_x_axis_ticks(std::ostream& o, double lo, double hi, const std::string& label) {
  auto x_of = [&](double v) { return kLeft + (v - lo) / (hi - lo) * (kPlotRight - kLeft); };
  const Axis xa = nice_axis(lo, hi);
  for (long k = std::lround(std::ceil(lo / xa.step - 1e-9)); k * xa.step <= hi + 1e-9 * xa.step; ++k) {
    const std::string x = coord(x_of(k * xa.step));
    o << "<line x1=\"" << x << "\" y1=\"" << coord(kPlotBottom) << "\" x2=\"" << x << "\" y2=\""
      << coord(kPlotBottom + 5) << "\" stroke=\"black\"/>\n"
      << "<text x=\"" << x << "\" y=\"" << coord(kPlotBottom + 18) << "\" text-anchor=\"middle\">"
      << fixed(k * xa.step, xa.decimals) << "</text>\n";
  }
  o << "<text x=\"" << coord((kLeft + kPlotRight) / 2) << "\" y=\"" << coord(kHeight - 14)
    << "\" text-anchor=\"middle\">" << xml_escape(label) << "</text>\n";
}

void draw_legend(std::ostream& o, const std::vector<std::string>& names, bool filled) {
  for (size_t i = 0; i < names.size(); ++i) {
    const double y = kTop + 10 + 20.0 * i;
    if (filled) {
      o << "<rect class=\"swatch\" x=\"" << coord(kPlotRight + 15) << "\" y=\"" << coord(y - 6)
        << "\" width=\"12\" height=\"12\" fill=\"" << colour(i) << "\"/>\n";
    } else {
      o << "<line class=\"swatch\" x1=\"" << coord(kPlotRight + 15) << "\" y1=\"" << coord(y) << "\" x2=\""
        << coord(kPlotRight + 27) << "\" y2=\"" << coord(y) << "\" stroke=\"" << colour(i)
        << "\" stroke-width=\"2\"/>\n";
    }
    o << "<text x=\"" << coord(kPlotRight + 33) << "\" y=\"" << coord(y + 4) << "\">" << xml_escape(names[i])
      << "</text>\n";
  }
}

}  // namespace

MarkdownTable::MarkdownTable(std::vector<std::string> header) {
  SIEVE_THROW_IF_NOT(!header.empty(), "a Markdown table needs at least one column");
  for (auto& h : header) header_.push_back(escape_cell(std::move(h)));
}

void MarkdownTable::add_row(std::vector<std::string> cells) {
  SIEVE_THROW_IF_NOT(cells.size() == header_.size(),
                     "table row has " << cells.size() << " cells but the header has " << header_.size());
  for (auto& c : cells) c = escape_cell(std::move(c));
  rows_.push_back(std::move(cells));
}

std::string MarkdownTable::str() const {
  const size_t cols = header_.size();
  std::vector<bool> numeric(cols);
  std::vector<size_t> width(cols);
  for (size_t c = 0; c < cols; ++c) {
    bool any_number = false, all_numeric = true;
    width[c] = std::max<size_t>(3, text_width(header_[c]));
    for (const auto& row : rows_) {
      const std::string& cell = row[c];
      width[c] = std::max(width[c], text_width(cell));
      if (cell.empty() || cell == "n/a") continue;
      const bool num = is_number(cell);
      any_number |= num;
      all_numeric &= num;
    }
    numeric[c] = any_number && all_numeric;
    if (numeric[c]) width[c] = std::max<size_t>(width[c], 4);  // room for "---:"
  }
  std::string out;
  auto add_line = [&](const std::vector<std::string>& cells) {
    for (size_t c = 0; c < cols; ++c) {
      const std::string pad(width[c] - text_width(cells[c]), ' ');
      out += c == 0 ? "| " : " | ";
      out += numeric[c] ? pad + cells[c] : cells[c] + pad;
    }
    out += " |\n";
  };
  add_line(header_);
  std::vector<std::string> rule(cols);
  for (size_t c = 0; c < cols; ++c)
    rule[c] = numeric[c] ? std::string(width[c] - 1, '-') + ":" : std::string(width[c], '-');
  add_line(rule);
  for (const auto& row : rows_) add_line(row);
  return out;
}

std::string fmt_num(double v, int decimals) { return std::isnan(v) ? "n/a" : fixed(v, decimals); }

std::string fmt_mean_std(const MeanStd& v, int decimals) {
  if (std::isnan(v.mean) || std::isnan(v.std) || v.n <= 1) return fmt_num(v.mean, decimals);
  return fixed(v.mean, decimals) + " \u00b1 " + fixed(v.std, decimals);
}

std::string fmt_signed(double v, int decimals) {
  if (std::isnan(v)) return "n/a";
  std::string s = fixed(v, decimals);
  return s[0] == '-' ? s : "+" + s;
}

std::string svg_bar_chart(const std::string& title, const std::vector<std::string>& groups,
                          const std::vector<BarSeries>& series, const std::string& y_label) {
  double lo = 0, hi = 0;
  for (const auto& s : series) {
    SIEVE_THROW_IF_NOT(s.values.size() == groups.size(), "bar series '" << s.name << "' has "
                                                                        << s.values.size() << " values for "
                                                                        << groups.size() << " groups");
    SIEVE_THROW_IF_NOT(s.errors.empty() || s.errors.size() == groups.size(),
                       "bar series '" << s.name << "' has " << s.errors.size() << " error bars for "
                                      << groups.size() << " groups");
    for (size_t g = 0; g < groups.size(); ++g) {
      const double v = s.values[g], e = s.errors.empty() || std::isnan(s.errors[g]) ? 0 : s.errors[g];
      if (std::isnan(v)) continue;
      SIEVE_THROW_IF_NOT(std::isfinite(v) && std::isfinite(e) && e >= 0,
                         "bar series '" << s.name << "' needs finite values and non-negative error bars");
      lo = std::min(lo, v - e);
      hi = std::max(hi, v + e);
    }
  }
  const Axis axis = nice_axis(lo, hi);
  std::ostringstream o;
  open_svg(o, title);
  draw_y_axis(o, axis, y_label);

  const double group_w = groups.empty() ? 0 : (kPlotRight - kLeft) / groups.size();
  const double bar_w = series.empty() ? 0 : 0.8 * group_w / series.size();  // 10% gap either side
  const double zero = axis.y(0);
  for (size_t g = 0; g < groups.size(); ++g) {
    o << "<text x=\"" << coord(kLeft + (g + 0.5) * group_w) << "\" y=\"" << coord(kPlotBottom + 18)
      << "\" text-anchor=\"middle\">" << xml_escape(groups[g]) << "</text>\n";
    for (size_t s = 0; s < series.size(); ++s) {
      const double v = series[s].values[g];
      if (std::isnan(v)) continue;
      const double x = kLeft + g * group_w + 0.1 * group_w + s * bar_w, top = std::min(zero, axis.y(v));
      o << "<rect class=\"bar\" x=\"" << coord(x) << "\" y=\"" << coord(top) << "\" width=\"" << coord(bar_w)
        << "\" height=\"" << coord(std::fabs(axis.y(v) - zero)) << "\" fill=\"" << colour(s) << "\"><title>"
        << xml_escape(series[s].name + " / " + groups[g] + ": " + fmt_num(v)) << "</title></rect>\n";
      if (series[s].errors.empty() || std::isnan(series[s].errors[g])) continue;
      const double e = series[s].errors[g], cx = x + bar_w / 2, cap = bar_w / 4;
      const std::string y_lo = coord(axis.y(v - e)), y_hi = coord(axis.y(v + e));
      o << "<path class=\"err\" d=\"M" << coord(cx) << ' ' << y_lo << " V" << y_hi << " M" << coord(cx - cap)
        << ' ' << y_hi << " H" << coord(cx + cap) << " M" << coord(cx - cap) << ' ' << y_lo << " H"
        << coord(cx + cap) << "\" stroke=\"black\" fill=\"none\"/>\n";
    }
  }
  o << "<line x1=\"" << coord(kLeft) << "\" y1=\"" << coord(zero) << "\" x2=\"" << coord(kPlotRight)
    << "\" y2=\"" << coord(zero) << "\" stroke=\"black\"/>\n";
  std::vector<std::string> names;
  for (const auto& s : series) names.push_back(s.name);
  draw_legend(o, names, true);
  o << "</svg>\n";
  return o.str();
}

std::string svg_histograms(const std::string& title,
                           const std::vector<std::pair<std::string, Histogram>>& hists,
                           const std::string& x_label) {
  SIEVE_THROW_IF_NOT(!hists.empty(), "svg_histograms needs at least one histogram");
  const Histogram& ref = hists.front().second;
  SIEVE_THROW_IF_NOT(!ref.counts.empty() && std::isfinite(ref.lo) && std::isfinite(ref.hi) && ref.hi > ref.lo,
                     "histogram '" << hists.front().first << "' needs bins and hi > lo");
  std::vector<std::vector<double>> fractions;
  double max_fraction = 0;
  for (const auto& [name, h] : hists) {
    SIEVE_THROW_IF_NOT(h.lo == ref.lo && h.hi == ref.hi && h.counts.size() == ref.counts.size(),
                       "histogram '" << name << "' has other bins than '" << hists.front().first << "'");
    size_t total = 0;
    for (size_t c : h.counts) total += c;
    std::vector<double>& f = fractions.emplace_back();
    for (size_t c : h.counts) f.push_back(total == 0 ? 0.0 : static_cast<double>(c) / total);
    max_fraction = std::max(max_fraction, *std::max_element(f.begin(), f.end()));
  }
  const Axis axis = nice_axis(0, max_fraction);
  std::ostringstream o;
  open_svg(o, title);
  draw_y_axis(o, axis, "fraction");

  // The x axis is exactly [lo, hi] so that bins line up; ticks sit at round values inside it.
  auto x_of = [&](double v) { return kLeft + (v - ref.lo) / (ref.hi - ref.lo) * (kPlotRight - kLeft); };
  draw_x_axis_ticks(o, ref.lo, ref.hi, x_label);

  const double bins = static_cast<double>(ref.counts.size()), zero = axis.y(0);
  for (size_t i = 0; i < hists.size(); ++i) {
    o << "<path class=\"hist\" d=\"M" << coord(x_of(ref.lo)) << ' ' << coord(zero);
    for (size_t b = 0; b < fractions[i].size(); ++b)
      o << " V" << coord(axis.y(fractions[i][b])) << " H"
        << coord(kLeft + (b + 1) / bins * (kPlotRight - kLeft));
    o << " V" << coord(zero) << "\" fill=\"none\" stroke=\"" << colour(i) << "\" stroke-width=\"1.5\"/>\n";
  }
  o << "<line x1=\"" << coord(kLeft) << "\" y1=\"" << coord(zero) << "\" x2=\"" << coord(kPlotRight)
    << "\" y2=\"" << coord(zero) << "\" stroke=\"black\"/>\n";
  std::vector<std::string> names;
  for (const auto& h : hists) names.push_back(h.first);
  draw_legend(o, names, false);
  o << "</svg>\n";
  return o.str();
}

std::string svg_scatter(const std::string& title, const std::vector<ScatterSeries>& series,
                        const std::string& x_label, const std::string& y_label) {
  double xlo = INFINITY, xhi = -INFINITY, ylo = INFINITY, yhi = -INFINITY;
  for (const auto& s : series) {
    SIEVE_THROW_IF_NOT(s.x.size() == s.y.size(), "scatter series '" << s.name << "' has " << s.x.size()
                                                                    << " x values and " << s.y.size() << " y values");
    SIEVE_THROW_IF_NOT(s.labels.empty() || s.labels.size() == s.x.size(),
                       "scatter series '" << s.name << "' needs one label per point");
    for (size_t i = 0; i < s.x.size(); ++i) {
      if (std::isnan(s.x[i]) || std::isnan(s.y[i])) continue;
      xlo = std::min(xlo, s.x[i]), xhi = std::max(xhi, s.x[i]);
      ylo = std::min(ylo, s.y[i]), yhi = std::max(yhi, s.y[i]);
    }
  }
  if (!std::isfinite(xlo)) xlo = 0, xhi = 1, ylo = 0, yhi = 1;
  const Axis ya = nice_axis(ylo, yhi), xa = nice_axis(xlo, xhi);
  auto x_of = [&](double v) { return kLeft + (v - xa.lo) / (xa.hi - xa.lo) * (kPlotRight - kLeft); };
  std::ostringstream o;
  open_svg(o, title);
  draw_y_axis(o, ya, y_label);
  o << "<line x1=\"" << coord(kLeft) << "\" y1=\"" << coord(kPlotBottom) << "\" x2=\"" << coord(kPlotRight)
    << "\" y2=\"" << coord(kPlotBottom) << "\" stroke=\"black\"/>\n";
  draw_x_axis_ticks(o, xa.lo, xa.hi, x_label);
  std::vector<std::string> names;
  for (size_t s = 0; s < series.size(); ++s) {
    names.push_back(series[s].name);
    for (size_t i = 0; i < series[s].x.size(); ++i) {
      if (std::isnan(series[s].x[i]) || std::isnan(series[s].y[i])) continue;
      o << "<circle class=\"point\" cx=\"" << coord(x_of(series[s].x[i])) << "\" cy=\"" << coord(ya.y(series[s].y[i]))
        << "\" r=\"5\" fill=\"" << colour(s) << "\"><title>" << xml_escape(series[s].name)
        << (series[s].labels.empty() ? "" : " " + xml_escape(series[s].labels[i])) << ": ("
        << fixed(series[s].x[i], 3) << ", " << fixed(series[s].y[i], 3) << ")</title></circle>\n";
    }
  }
  draw_legend(o, names, true);
  o << "</svg>\n";
  return o.str();
}

std::string xml_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      // Other control characters are not allowed in XML 1.0 at all, escaped or not.
      default:
        out += (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n' && c != '\r') ? ' ' : c;
    }
  }
  return out;
}

}  // namespace sieve::eval
