// The message of the mqa::input_error an action throws, or "" when it throws none: tests of bad
// input compare the whole message a user would read.
#pragma once

#include <string>

#include "validator/input_error.hpp"

namespace mqa::test {

std::string input_error_of(auto&& action) {
  try {
    action();
  } catch (const mqa::input_error& e) {
    return e.what();
  }
  return "";
}

}  // namespace mqa::test
