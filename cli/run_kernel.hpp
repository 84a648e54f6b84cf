// `mqacheck run --kernel 'COMMAND'`: the flags that judge a kernel living elsewhere, and the run
// (validator/verdict/kernel_suite.hpp) with Ctrl-C turned into a clean stop.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "api/kernel_options.hpp"
#include "api/suite_run.hpp"
#include "validator/case/case.hpp"
#include "validator/verdict/kernel_suite.hpp"

namespace mqa::cli {

using kernel_flags = api::kernel_choices;

// Registers --kernel, --timeout, --must-produce, --operation, --timing-launches and the contract flags on `run`: each of them
// but --kernel needs --kernel, and --kernel excludes `variant`.
void add_kernel_flags(CLI::App& run, kernel_flags& k, CLI::Option* variant);

using api::kernel_options_of;

verdict::suite_report run_kernel(const cases::suite& s, verdict::kernel_options k, const verdict::run_options& o);

// After the result table: the kernel, its adapter, the overhead per case, every error in full.
void print_kernel_summary(const verdict::suite_report& r);

using api::run_exit_status;

}  // namespace mqa::cli
