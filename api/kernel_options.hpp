// The choices that judge a kernel mqacheck does not build (`mqacheck run --kernel`, and the same run
// in the kernel's own Python process, api/suite_run.hpp), checked into verdict::kernel_options by one
// function, so both ways refuse the same values with the same words.
#pragma once

#include <string>
#include <vector>

#include "api/contract_options.hpp"
#include "validator/verdict/kernel_suite.hpp"

namespace mqa::api {

struct kernel_choices {
  std::string command;  // how the kernel is run, as the report names it
  double timeout_seconds = 300;
  std::vector<std::string> must_produce;
  std::string operation = "prefill";  // prefill, paged or both
  int timing_launches = 3;  // launches after the two judged, for the kernel's time (best and median)
  contract_options declared;
  // An indexer: the kernel returns top-k indices too (docs/protocol.md), judged by this convention.
  bool topk_indices = false;
  std::string topk_columns = "absolute";
  bool topk_sorted = false;
};

// The checked options; input_error for a bad value (a finding class, an operation, a contract the
// operation cannot have), before anything starts.
verdict::kernel_options kernel_options_of(const kernel_choices& k);

}  // namespace mqa::api
