// `mqacheck run --kernel 'COMMAND'`: the flags that judge a kernel living elsewhere, and the run
// (validator/verdict/kernel_suite.hpp) with Ctrl-C turned into a clean stop.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "api/contract_options.hpp"
#include "validator/case/case.hpp"
#include "validator/verdict/kernel_suite.hpp"

namespace mqa::cli {

struct kernel_flags {
  std::string command;
  double timeout_seconds = 300;
  std::vector<std::string> must_produce;
  std::string operation = "prefill";
  int timing_launches = 3;  // launches after the two judged, for the kernel's time (best and median)
  api::contract_options declared;
  // An indexer: the adapter returns top-k indices too (docs/protocol.md), judged by this convention.
  bool topk_indices = false;
  std::string topk_columns = "absolute";
  bool topk_sorted = false;
};

// Registers --kernel, --timeout, --must-produce, --operation, --timing-launches and the contract flags on `run`: each of them
// but --kernel needs --kernel, and --kernel excludes `variant`.
void add_kernel_flags(CLI::App& run, kernel_flags& k, CLI::Option* variant);

// The checked options; input_error for a bad value, before anything starts.
verdict::kernel_options kernel_options_of(const kernel_flags& k);

verdict::suite_report run_kernel(const cases::suite& s, verdict::kernel_options k, const verdict::run_options& o);

// After the result table: the kernel, its adapter, the overhead per case, every error in full.
void print_kernel_summary(const verdict::suite_report& r);

// 0: every expectation holds; 1: findings or cases that could not be judged; 2: no case could be.
int run_exit_status(const verdict::suite_report& r);

}  // namespace mqa::cli
