// mqacheck: exit 0 pass, 1 findings, 2 bad input (docs/design.md).
#include <fmt/core.h>

#include <CLI/CLI.hpp>
#include <csignal>
#include <exception>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <system_error>

#include "reports/build_info.hpp"
#include "validator/activity.hpp"
#include "validator/input_error.hpp"
#include "validator/io/interrupt.hpp"
#include "commands.hpp"

int& mqa::cli::exit_status() {
  static int status = 0;
  return status;
}

std::vector<std::string>& mqa::cli::command_line() {
  static std::vector<std::string> arguments;
  return arguments;
}

namespace {
extern "C" void ignore_file_size_signal(int) {}
}  // namespace

int main(int argc, char** argv) {
  // First, before any thread starts: an interrupted command leaves no partial file or folder.
  mqa::io::install_interrupt_cleanup();
  // A write past RLIMIT_FSIZE (`ulimit -f`) would otherwise end mqacheck by SIGXFSZ with the file
  // half written and the staging left behind; caught, the write fails with EFBIG and takes the
  // error path of any failed write: the path named, exit status 2, nothing partial left. A handler
  // that does nothing rather than SIG_IGN: an adapter mqacheck starts gets the default back at exec.
  std::signal(SIGXFSZ, ignore_file_size_signal);
  mqa::cli::command_line().assign(argv, argv + argc);
  CLI::App app{"mqacheck: certifies fp8 MQA-logits kernels against an exact oracle"};
  app.require_subcommand(1);
  // The version and the commit, as reports and certificates carry them, so that a binary can be
  // matched with the results it made.
  const mqa::reports::build_info build = mqa::reports::this_build();
  app.set_version_flag("--version", fmt::format("mqacheck {} ({})", build.version, build.commit),
                       "print the version and the git commit of this build, then exit");
  mqa::cli::add_fp8_commands(app);
  mqa::cli::add_case_commands(app);
  mqa::cli::add_run_commands(app);
  mqa::cli::add_check_command(app);
  mqa::cli::add_diff_command(app);
  mqa::cli::add_merge_command(app);
  mqa::cli::add_certify_command(app);
  mqa::cli::add_shrink_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    fmt::print(stderr, "mqacheck: {} (see --help)\n", e.what());
    return 2;
  } catch (const mqa::input_error& e) {
    fmt::print(stderr, "mqacheck: {}\n", e.what());
    return 2;
  } catch (const nlohmann::json::exception& e) {
    // Reports are checked when read (validator/verdict/read_report.hpp); this is the last guard, never a crash.
    fmt::print(stderr, "mqacheck: a report holds something this mqacheck cannot read: {}\n", e.what());
    return 2;
  } catch (const std::bad_alloc&) {
    const std::string doing = mqa::activity::current();
    fmt::print(stderr, "mqacheck: out of memory{}{}: this machine cannot hold the work; try a smaller case (m, n, "
               "heads) or fewer --threads\n", doing.empty() ? "" : " in ", doing);
    return 2;
  } catch (const std::filesystem::filesystem_error& e) {
    // A file the system would not let mqacheck examine or change (a permission, a full disk).
    fmt::print(stderr, "mqacheck: {}\n", e.what());
    return 2;
  } catch (const std::system_error& e) {
    // The system refused a thread (or another resource): like memory, the machine, not the input.
    const std::string doing = mqa::activity::current();
    const bool thread = e.code() == std::errc::resource_unavailable_try_again;
    fmt::print(stderr, "mqacheck: the system refused {}{}{}: {}{}\n", thread ? "a thread" : "a resource",
               doing.empty() ? "" : " in ", doing, e.what(), thread ? "; try fewer --threads" : "");
    return 2;
  } catch (const std::exception& e) {
    // mqacheck's own failure. Caught, so that the stack unwinds: what was staged is removed.
    fmt::print(stderr, "mqacheck: internal error: {} (please report it with the command line)\n", e.what());
    return 3;
  }
  return mqa::cli::exit_status();
}
