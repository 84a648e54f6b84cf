// A --timeout's value: CLI::PositiveNumber takes "nan" (no comparison with it fails), words a
// refusal of "inf" as a range of 300 digits, and takes 1e10 s, whose nanoseconds overflow the
// session's clock (the deadline then passed at once). At most kMaxSeconds: 11.6 days.
#pragma once

#include <CLI/CLI.hpp>

#include <cmath>
#include <string>

namespace mqa::cli {

inline constexpr double kMaxSeconds = 1e6;

inline CLI::Validator positive_seconds() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        double seconds = 0;
        std::size_t used = 0;
        try {
          seconds = std::stod(text, &used);
        } catch (const std::exception&) {
          used = 0;
        }
        if (used != text.size() || !(seconds > 0 && seconds <= kMaxSeconds))
          return "expected a number of seconds above 0 and at most 1e6, found '" + text + "'";
        return "";
      },
      "SECONDS");
}

}  // namespace mqa::cli
