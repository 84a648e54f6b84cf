// report.html: one self-contained page next to report.json, made from a report.json
// document (report.hpp) alone: inline CSS and SVG (svg.hpp), no script, no network, nothing to
// install; it opens from a CI artifact or a mail attachment. The verdict and broken expectations,
// a table of every result linking to its section, the mutants, then per case x variant the
// findings, the figures (max error/bound, ULP percentiles, top-k recall), the ULP histogram and
// the two heat maps over (row, key), and a legend of the maps' colours.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace mqa::reports {

std::string html(const nlohmann::json& report);

}  // namespace mqa::reports
