// Bad input: a file, flag or value the user can fix. The CLI prints the message on one line and
// exits with status 2; nothing else in mqacheck exits on the user's behalf.
#pragma once

#include <stdexcept>
#include <string>

namespace mqa {

class input_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace mqa
