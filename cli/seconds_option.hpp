// A --timeout's value: CLI::PositiveNumber takes "nan" (no comparison with it fails), and words a
// refusal of "inf" as a range of 300 digits.
#pragma once

#include <CLI/CLI.hpp>

#include <cmath>
#include <string>

namespace mqa::cli {

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
        if (used != text.size() || !std::isfinite(seconds) || !(seconds > 0))
          return "expected a positive, finite number of seconds, found '" + text + "'";
        return "";
      },
      "SECONDS");
}

}  // namespace mqa::cli
