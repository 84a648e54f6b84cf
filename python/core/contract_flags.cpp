#include "contract_flags.hpp"

#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include "validator/input_error.hpp"

namespace mqa::python {

api::contract_options contract_from_flags(const std::vector<std::string>& flags) {
  api::contract_options declared;
  CLI::App app{"contract"};
  declared.add_to(app);
  std::vector<std::string> reversed(flags.rbegin(), flags.rend());  // CLI11 takes them last first
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    throw input_error(fmt::format("contract: {} (accepted: the contract flags of mqacheck check)", e.what()));
  }
  declared.contract();  // a value no table knows is an input_error now, not at the first judgement
  return declared;
}

}  // namespace mqa::python
