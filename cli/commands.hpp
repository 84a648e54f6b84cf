// The subcommands of `mqacheck`. Each registers itself on the CLI11 app; its callback throws
// input_error for bad input (main turns that into one line on stderr and exit status 2).
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace mqa::cli {

void add_fp8_commands(CLI::App& app);
void add_case_commands(CLI::App& app);
void add_run_commands(CLI::App& app);
void add_check_command(CLI::App& app);
void add_diff_command(CLI::App& app);
void add_merge_command(CLI::App& app);
void add_certify_command(CLI::App& app);
void add_shrink_command(CLI::App& app);

// The exit status a command asks for (0 pass, 1 findings); bad input throws instead (status 2).
int& exit_status();

// mqacheck's command line as given (argv), for a command that starts mqacheck again (run --devices).
std::vector<std::string>& command_line();

}  // namespace mqa::cli
