// The slowdown rule of `mqacheck diff --max-slowdown F` (and `certify`): a kernel's time in a
// report is the best of its timed launches, with their median beside it (`run --kernel`,
// docs/protocol.md "Timing"). Two runs of the same code differ by about their launches' spread,
// so a pair regresses only when its best time grew beyond max(F, 1 + noise_baseline + noise_now),
// noise being (median - best) / best of each report's launches: a limit tighter than the noise
// the two runs measured would flag the noise.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace mqa::verdict {

struct kernel_time {
  double best = 0;   // kernel_seconds
  double noise = 0;  // kernel_noise; 0 where the report has none (one launch, an older report)
  int launches = 1;  // kernel_launches; 1 where the report has none
};

// A result's kernel time; nullopt where kernel_seconds is not a number.
std::optional<kernel_time> kernel_time_of(const nlohmann::json& result);

// The factor beyond which `now` is slower than `baseline` under --max-slowdown `max_slowdown`.
double slowdown_limit(double max_slowdown, const kernel_time& baseline, const kernel_time& now);

// "1.52x (best of 5 and 5; noise 3% and 4%; limit 1.3x)": the figures the rule used.
std::string describe_slowdown(const kernel_time& baseline, const kernel_time& now, double max_slowdown);

}  // namespace mqa::verdict
