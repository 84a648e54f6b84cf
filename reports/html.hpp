// report.html: one self-contained page next to report.json, made from a report.json document
// (report.hpp) alone. Inline CSS and SVG (svg.hpp); no script, no link, font or image outside
// the page, nothing to install: it opens from a CI artifact or a mail attachment.
//
// The first screen holds what a release decision needs, in this order:
//   - the verdict (#verdict), the broken expectations (beyond five, folded), the kernel under test
//     (`run --kernel`);
//   - the case x variant matrix (#matrix): rows the variants, columns the cases, each cell the
//     result's max error/bound coloured by its standing (fields.hpp) and linking to its section.
//     A mutant silent or off-class on a case while another case catches it is as expected: grey,
//     not red; red is only what breaks an expectation;
//   - the correct variants' headline measures (#headline): ULPs of A (p50, p99, p99.9, max), the
//     well-conditioned share and its raw ULPs (p99, max), max error/bound, each the worst case's;
//     and for the kernel under test the same case by case.
// Then the sections of the results that break an expectation, open, with their figures. Folded
// in <details> below: the skipped pairs (#skipped), the mutants (#mutants) and every other
// result's section (#results). Figures (ULP histogram, error/bound and masking heat maps, with
// the legend of their colours) are drawn only where they tell something: results that break an
// expectation, every result of the kernel under test, and each mutant on the first case that
// caught it; other results have their metrics line alone, which keeps the quick suite's page
// under 1 MB.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace mqa::reports {

std::string html(const nlohmann::json& report);

}  // namespace mqa::reports
