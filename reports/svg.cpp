#include "svg.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <map>
#include <tuple>

#include "fields.hpp"
#include "validator/verdict/heat_levels.hpp"

namespace mqa::reports {
namespace {

using verdict::error_level_of;
using verdict::kFirstFailingLevel;
using verdict::kNothingCompared;
using verdict::kShareSymbols;
using verdict::share_level_of;

// Error levels (heat_levels.hpp) grouped into the colours of the error map.
std::string_view error_class(char symbol) {
  const auto level = error_level_of(symbol);
  if (!level) return "n";
  if (*level <= 6) return "e1";  // '0'..'6': at most 2^-4 of the bound, exact included
  if (*level <= 9) return "e2";  // (2^-4, 2^-1]
  if (*level < kFirstFailingLevel) return "e3";
  if (*level <= 12) return "f1";  // 'B', 'C': (1, 16]
  return "f2";
}

std::string bucket_name(std::size_t b) {
  if (b == 0) return "0";
  if (b == 1) return "1";
  if (b == 31) return "2^30 and more";
  const std::uint64_t low = std::uint64_t{1} << (b - 1), high = (std::uint64_t{1} << b) - 1;
  return b <= 11 ? fmt::format("{}-{}", low, high) : fmt::format("2^{} to 2^{}-1", b - 1, b);
}

// A grid of CSS classes drawn with few elements: runs of one class along a row, stacked while the
// next rows repeat the same run, become rectangles; the commonest class is the background
// rectangle, the others one <path> per class whose <title> says what the colour means.
struct cell_grid {
  std::int64_t rows = 0, cols = 0;
  std::vector<std::string_view> classes;  // row-major; string literals
  std::string_view& at(std::int64_t r, std::int64_t c) { return classes[static_cast<std::size_t>(r * cols + c)]; }
};

std::string_view meaning(std::string_view css) {
  for (const auto* swatches : {&error_swatches(), &mask_swatches()})
    for (const auto& s : *swatches)
      if (css == s.css_class) return s.meaning;
  return "";
}

std::string draw(const cell_grid& g) {
  std::map<std::string_view, std::size_t> frequency;
  for (const auto& c : g.classes) ++frequency[c];
  const std::string_view background =
      std::max_element(frequency.begin(), frequency.end(), [](const auto& a, const auto& b) { return a.second < b.second; })
          ->first;
  std::string out = fmt::format("<rect class=\"cell {}\" x=\"0\" y=\"0\" width=\"{}\" height=\"{}\"><title>{}</title></rect>",
                                background, g.cols, g.rows, escape_markup(meaning(background)));
  std::map<std::string_view, std::string> paths;  // one per class
  struct open_rect {
    std::int64_t top, height;
  };
  using run = std::tuple<std::int64_t, std::int64_t, std::string_view>;  // first column, end column, class
  std::map<run, open_rect> open, next;
  auto emit = [&](const run& key, const open_rect& r) {
    const auto& [c0, c1, css] = key;
    paths[css] += fmt::format("M{} {}h{}v{}h-{}z", c0, r.top, c1 - c0, r.height, c1 - c0);
  };
  for (std::int64_t r = 0; r <= g.rows; ++r) {
    next.clear();
    if (r < g.rows) {
      for (std::int64_t c = 0; c < g.cols;) {
        std::int64_t e = c;
        const std::string_view css = g.classes[static_cast<std::size_t>(r * g.cols + c)];
        while (e < g.cols && g.classes[static_cast<std::size_t>(r * g.cols + e)] == css) ++e;
        if (css != background) {
          const run key{c, e, css};
          const auto found = open.find(key);
          next[key] = found != open.end() ? open_rect{found->second.top, found->second.height + 1} : open_rect{r, 1};
        }
        c = e;
      }
    }
    for (const auto& [key, rect] : open)
      if (!next.count(key)) emit(key, rect);
    open.swap(next);
  }
  for (const auto& [css, d] : paths)
    out += fmt::format("<path class=\"cell {}\" d=\"{}\"><title>{}</title></path>", css, d, escape_markup(meaning(css)));
  return out;
}

std::string svg_open(const char* kind, std::int64_t rows, std::int64_t cols) {
  // Fixed width; the height follows the cells' aspect within limits, so that a map of 6 x 40
  // cells stays readable and one of 40 x 12 stays on the page.
  const double height = std::clamp(320.0 * static_cast<double>(rows) / static_cast<double>(cols), 64.0, 400.0);
  return fmt::format("<svg class=\"heatmap {}\" viewBox=\"0 0 {} {}\" width=\"320\" height=\"{:.0f}\" "
                     "preserveAspectRatio=\"none\" shape-rendering=\"crispEdges\" role=\"img\">",
                     kind, cols, rows, height);
}

}  // namespace

const std::vector<swatch>& error_swatches() {
  static const std::vector<swatch> s{
      {"n", "#e8e8e8", "nothing compared (outside every window, or not judged)"},
      {"e1", "#deebf7", "error/bound at most 2^-4 (exact included)"},
      {"e2", "#6baed6", "error/bound in (2^-4, 1/2]"},
      {"e3", "#08519c", "error/bound in (1/2, 1]: near the bound"},
      {"f1", "#fb6a4a", "error/bound in (1, 16]: beyond the bound"},
      {"f2", "#a50f15", "error/bound above 16, or infinite"},
      {"x", "#000000", "NaN or infinity where the exact value is a number"},
  };
  return s;
}

const std::vector<swatch>& mask_swatches() {
  static const std::vector<swatch> s{
      {"o", "#e8e8e8", "outside every window (nothing compared)"},
      {"i", "#f7fbff", "inside windows, masking right"},
      {"m1", "#fdd0a2", "mask mismatches on up to 10% of the cell"},
      {"m2", "#fd8d3c", "mask mismatches on up to 50% of the cell"},
      {"m3", "#d94801", "mask mismatches on more than half the cell"},
      {"u", "#756bb1", "unwritten elements (the poison value survived)"},
  };
  return s;
}

std::string histogram_svg(const nlohmann::json& histogram) {
  constexpr int kBar = 10, kHeight = 100, kLeft = 4, kBottom = 16;
  std::int64_t most = 0;
  for (const auto& c : histogram) most = std::max(most, c.get<std::int64_t>());
  constexpr double kScale = 1.1;  // on the page
  std::string out = fmt::format("<svg class=\"histogram\" viewBox=\"0 0 {} {}\" width=\"{:.0f}\" height=\"{:.0f}\" role=\"img\">",
                                kLeft + 32 * kBar + 4, kHeight + kBottom, kScale * (kLeft + 32 * kBar + 4),
                                kScale * (kHeight + kBottom));
  out += fmt::format("<line class=\"axis\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>", kLeft, kHeight, kLeft + 32 * kBar,
                     kHeight);
  for (std::size_t b = 0; b < histogram.size(); ++b) {
    const auto count = histogram[b].get<std::int64_t>();
    if (count == 0) continue;
    // log scale: one value is a visible bar, the largest bucket the full height.
    const double h = 4 + (kHeight - 4) * std::log1p(static_cast<double>(count)) / std::log1p(static_cast<double>(most));
    out += fmt::format("<rect class=\"bar\" x=\"{}\" y=\"{:.1f}\" width=\"{}\" height=\"{:.1f}\"><title>{} ULP: {} "
                       "value{}</title></rect>",
                       kLeft + static_cast<int>(b) * kBar + 1, kHeight - h, kBar - 2, h, bucket_name(b), count,
                       count == 1 ? "" : "s");
  }
  for (const auto& [b, label] : std::array<std::pair<int, const char*>, 6>{
           {{0, "0"}, {1, "1"}, {5, "16"}, {11, "2^10"}, {21, "2^20"}, {31, "2^30"}}})
    out += fmt::format("<text x=\"{}\" y=\"{}\">{}</text>", kLeft + b * kBar + kBar / 2, kHeight + 12, label);
  if (most == 0)
    out += fmt::format("<text class=\"empty\" x=\"{}\" y=\"{}\">nothing compared</text>", kLeft + 16 * kBar, kHeight / 2);
  return out + "</svg>";
}

std::string error_map_svg(const nlohmann::json& map, const nlohmann::json& worst) {
  cell_grid g{map.at("rows").get<std::int64_t>(), map.at("cols").get<std::int64_t>(), {}};
  g.classes.resize(static_cast<std::size_t>(g.rows * g.cols));
  const auto& errors = map.at("error_over_bound");
  const auto& nonfinite = map.at("nonfinite");
  for (std::int64_t r = 0; r < g.rows; ++r) {
    const auto& row = errors[static_cast<std::size_t>(r)].get_ref<const std::string&>();
    for (std::int64_t c = 0; c < g.cols; ++c) {
      g.at(r, c) = error_class(row[static_cast<std::size_t>(c)]);
      if (nonfinite.is_array() && nonfinite[static_cast<std::size_t>(r)].get_ref<const std::string&>()[static_cast<std::size_t>(c)] !=
                                      kShareSymbols[0])
        g.at(r, c) = "x";
    }
  }
  std::string out = svg_open("errors", g.rows, g.cols);
  out += draw(g);
  if (worst.is_array()) {
    const std::int64_t m = map.at("m").get<std::int64_t>(), n = map.at("n").get<std::int64_t>();
    const std::int64_t r = worst[0].get<std::int64_t>() * g.rows / m, c = worst[1].get<std::int64_t>() * g.cols / n;
    out += fmt::format("<rect class=\"worst\" x=\"{}\" y=\"{}\" width=\"1\" height=\"1\"><title>the largest error/bound: "
                       "row {}, key {}</title></rect>",
                       c, r, worst[0].get<std::int64_t>(), worst[1].get<std::int64_t>());
  }
  return out + "</svg>";
}

std::string mask_map_svg(const nlohmann::json& map) {
  cell_grid g{map.at("rows").get<std::int64_t>(), map.at("cols").get<std::int64_t>(), {}};
  g.classes.resize(static_cast<std::size_t>(g.rows * g.cols));
  const auto& errors = map.at("error_over_bound");
  const auto& mismatches = map.at("mask_mismatches");
  const auto& unwritten = map.at("unwritten");
  auto symbol = [](const nlohmann::json& grid, std::int64_t r, std::int64_t c) {
    return grid.is_array() ? grid[static_cast<std::size_t>(r)].get_ref<const std::string&>()[static_cast<std::size_t>(c)]
                           : kShareSymbols[0];
  };
  for (std::int64_t r = 0; r < g.rows; ++r)
    for (std::int64_t c = 0; c < g.cols; ++c) {
      const std::size_t share = share_level_of(symbol(mismatches, r, c)).value_or(0);
      g.at(r, c) = symbol(unwritten, r, c) != kShareSymbols[0] ? "u"
                   : share == 0 ? (symbol(errors, r, c) == kNothingCompared ? "o" : "i")
                   : share <= 1 ? "m1"
                   : share <= 5 ? "m2"
                                : "m3";
    }
  std::string out = svg_open("masks", g.rows, g.cols);
  out += draw(g);
  return out + "</svg>";
}

}  // namespace mqa::reports
