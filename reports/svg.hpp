// The figures of the HTML report (html.hpp) as inline SVG, drawn from a result's JSON alone:
//   - the ULP histogram: one bar per nonempty log2 bucket (0, 1, 2-3, 4-7, ... 2^30+), heights on
//     a log scale so that a few far-off values stay visible next to millions of exact ones;
//   - the error heat map over (row, key): each cell coloured by its error/bound level
//     (heat_levels.hpp), NaN/inf cells black, the worst element's cell outlined;
//   - the mask heat map: cells with mask mismatches (by the share of their elements), cells with
//     unwritten elements, over the shape of the windows (cells where nothing was compared).
// Cells of one colour are drawn as one rectangle (runs along a row, stacked while rows repeat),
// and the commonest colour as the background: a map is a handful of elements, not 16384.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace mqa::reports {

// histogram_log2: the 32 counts of metrics.ulp.
std::string histogram_svg(const nlohmann::json& histogram_log2);

// heat_map: metrics.heat_map (not null); worst: metrics.worst ([i, j] or null).
std::string error_map_svg(const nlohmann::json& heat_map, const nlohmann::json& worst);
std::string mask_map_svg(const nlohmann::json& heat_map);

// The colours of the maps, for the page's legend: CSS class, colour, meaning.
struct swatch {
  const char* css_class;
  const char* colour;
  const char* meaning;
};
const std::vector<swatch>& error_swatches();
const std::vector<swatch>& mask_swatches();

}  // namespace mqa::reports
