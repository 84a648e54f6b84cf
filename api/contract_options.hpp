// The contract of a kernel mqacheck does not know, as declared on the command line (`check`,
// `run --kernel`, `shrink`) and by the Python extension, which takes the same flags: every contract
// flag is registered and read here, and only here, so that a new one is added once for everyone.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kernels/contract.hpp"

namespace mqa::api {

class contract_options {
 public:
  // Registers --accumulate, --promote-every, --scale, --weights, --logits-dtype, --relu, --mask and --columns on `cmd`;
  // returns them (for needs/excludes).
  std::vector<CLI::Option*> add_to(CLI::App& cmd);

  // The declared contract, masking clean unless --mask says otherwise. Throws input_error naming
  // the flag, the value and what is accepted; call it before anything runs.
  kernels::contract contract() const;

  // --mask as given; unset: the case's (or bundle's) clean_logits decides.
  std::optional<kernels::masking> mask() const;

  // The flags given that differ from their defaults, as a command line repeats them
  // ("--accumulate bf16 --relu fmax"); empty when none does.
  std::string flags() const;

 private:
  std::string accumulate_ = "fp32", scale_ = "after-head-sum", weights_ = "fp32", logits_ = "fp32", relu_ = "keeps-nan",
              mask_, columns_ = "absolute";
  std::int64_t promote_every_ = 0;
};

}  // namespace mqa::api
