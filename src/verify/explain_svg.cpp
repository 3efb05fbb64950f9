// cosine_map and render_map_svg: what `sieve explain` shows.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "sieve/error.h"
#include "sieve/verify.h"

namespace sieve {
namespace {

std::string xml_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

// Diverging colour: -1 blue (33,102,172), 0 white, +1 red (178,24,43).
std::string colour(float v) {
  v = std::max(-1.f, std::min(1.f, v));
  int r, g, b;
  if (v >= 0) {
    r = static_cast<int>(std::lround(255 + v * (178 - 255)));
    g = static_cast<int>(std::lround(255 + v * (24 - 255)));
    b = static_cast<int>(std::lround(255 + v * (43 - 255)));
  } else {
    r = static_cast<int>(std::lround(255 - v * (33 - 255)));
    g = static_cast<int>(std::lround(255 - v * (102 - 255)));
    b = static_cast<int>(std::lround(255 - v * (172 - 255)));
  }
  char buf[16];
  std::snprintf(buf, sizeof buf, "#%02x%02x%02x", r, g, b);
  return buf;
}

}  // namespace

CosineMap cosine_map(const TokenStates& q, const TokenStates& c, size_t max_tokens) {
  SIEVE_THROW_IF_NOT(q.length > 0 && c.length > 0, "both texts need token states");
  const size_t d = q.values.size() / q.length;
  SIEVE_THROW_IF_NOT(c.values.size() == c.length * d, "query and candidate token states differ in width");
  CosineMap m;
  m.m = std::min(q.length, max_tokens);
  m.n = std::min(c.length, max_tokens);
  m.values.resize(m.m * m.n);
  std::vector<double> qn(m.m), cn(m.n);
  for (size_t i = 0; i < m.m; ++i) {
    double s = 0;
    for (size_t h = 0; h < d; ++h) s += double(q.values[i * d + h]) * q.values[i * d + h];
    qn[i] = std::sqrt(std::max(s, 1e-24));
  }
  for (size_t j = 0; j < m.n; ++j) {
    double s = 0;
    for (size_t h = 0; h < d; ++h) s += double(c.values[j * d + h]) * c.values[j * d + h];
    cn[j] = std::sqrt(std::max(s, 1e-24));
  }
  for (size_t i = 0; i < m.m; ++i)
    for (size_t j = 0; j < m.n; ++j) {
      double dot = 0;
      for (size_t h = 0; h < d; ++h) dot += double(q.values[i * d + h]) * c.values[j * d + h];
      m.values[i * m.n + j] = static_cast<float>(dot / (qn[i] * cn[j]));
    }
  return m;
}

std::string render_map_svg(const CosineMap& map, const std::vector<std::string>& qt, const std::vector<std::string>& ct,
                           const std::string& title) {
  // The title is one line of 13px bold sans-serif: wide enough for it at a generous 8.5px per
  // character (it was clipped to the map's width); the axes are named, query down the left and
  // candidate along the top.
  const int cell = 22, left = 140, top = 150, legend = 60, title_size = 13;
  const int grid_w = left + static_cast<int>(map.n) * cell + legend;
  const int title_w = 16 + static_cast<int>(std::ceil(title.size() * 8.5));
  const int w = std::max(grid_w, title_w), h = top + static_cast<int>(map.m) * cell + 20;
  std::ostringstream s;
  s << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << w << "\" height=\"" << h
    << "\" font-family=\"sans-serif\" font-size=\"11\">\n";
  s << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  s << "<text x=\"8\" y=\"18\" font-size=\"" << title_size << "\" font-weight=\"bold\">" << xml_escape(title)
    << "</text>\n";
  const int grid_mid_x = left + static_cast<int>(map.n) * cell / 2, grid_mid_y = top + static_cast<int>(map.m) * cell / 2;
  s << "<text class=\"axis\" x=\"" << grid_mid_x << "\" y=\"40\" text-anchor=\"middle\" font-size=\"12\" "
    << "font-style=\"italic\">candidate</text>\n";
  s << "<text class=\"axis\" x=\"16\" y=\"" << grid_mid_y << "\" text-anchor=\"middle\" font-size=\"12\" "
    << "font-style=\"italic\" transform=\"rotate(-90 16 " << grid_mid_y << ")\">query</text>\n";
  for (size_t j = 0; j < map.n; ++j) {  // candidate tokens along the top, rotated
    int x = left + static_cast<int>(j) * cell + cell / 2 + 4, y = top - 6;
    s << "<text x=\"" << x << "\" y=\"" << y << "\" transform=\"rotate(-60 " << x << " " << y << ")\">"
      << xml_escape(j < ct.size() ? ct[j] : "") << "</text>\n";
  }
  for (size_t i = 0; i < map.m; ++i) {
    int y = top + static_cast<int>(i) * cell;
    s << "<text x=\"" << left - 6 << "\" y=\"" << y + cell / 2 + 4 << "\" text-anchor=\"end\">"
      << xml_escape(i < qt.size() ? qt[i] : "") << "</text>\n";
    for (size_t j = 0; j < map.n; ++j) {
      float v = map.values[i * map.n + j];
      char val[16];
      std::snprintf(val, sizeof val, "%.2f", v);
      s << "<rect x=\"" << left + static_cast<int>(j) * cell << "\" y=\"" << y << "\" width=\"" << cell << "\" height=\""
        << cell << "\" fill=\"" << colour(v) << "\"><title>" << xml_escape(i < qt.size() ? qt[i] : "") << " / "
        << xml_escape(j < ct.size() ? ct[j] : "") << ": " << val << "</title></rect>\n";
    }
  }
  // Legend: -1 .. 1.
  int lx = left + static_cast<int>(map.n) * cell + 20;
  for (int k = 0; k <= 10; ++k) {
    float v = 1.f - k * 0.2f;
    s << "<rect x=\"" << lx << "\" y=\"" << top + k * 10 << "\" width=\"12\" height=\"10\" fill=\"" << colour(v) << "\"/>\n";
  }
  s << "<text x=\"" << lx + 16 << "\" y=\"" << top + 9 << "\">1</text>\n";
  s << "<text x=\"" << lx + 16 << "\" y=\"" << top + 109 << "\">-1</text>\n";
  s << "</svg>\n";
  return s.str();
}

}  // namespace sieve
