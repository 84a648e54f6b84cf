// The contract flags of `mqacheck check` (["--accumulate", "bf16", ...]) as the extension takes them
// from Python, read by the command line's own options (api/contract_options.hpp).
#pragma once

#include <string>
#include <vector>

#include "api/contract_options.hpp"

namespace mqa::python {

// input_error for a flag or value the command line would refuse.
api::contract_options contract_from_flags(const std::vector<std::string>& flags);

}  // namespace mqa::python
