#include "run_devices.hpp"

#include <fcntl.h>
#include <fmt/core.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "interrupt_guard.hpp"
#include "kernels/external/strays.hpp"
#include "reports/escape.hpp"
#include "validator/external/scratch.hpp"
#include "validator/external/session.hpp"
#include "validator/input_error.hpp"
#include "validator/io/atomic_file.hpp"
#include "validator/verdict/balance.hpp"
#include "validator/verdict/kernel_suite.hpp"
#include "validator/verdict/merge.hpp"
#include "validator/verdict/read_report.hpp"
#include "validator/verdict/verdict.hpp"

extern char** environ;

namespace mqa::cli {
namespace {

namespace fs = std::filesystem;

// The variables each GPU worker gets, both set: CUDA reads the first, ROCm's HIP the second.
constexpr std::string_view kDeviceVariables[] = {"CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES"};
// Every variable that narrows the devices `all` means (ROCR_VISIBLE_DEVICES: AMD's runtime, below HIP).
constexpr std::string_view kVisibilityVariables[] = {"CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES",
                                                     "ROCR_VISIBLE_DEVICES"};

std::vector<std::string> split_list(std::string_view text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    out.emplace_back(text.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

bool device_id(std::string_view s) {
  return !s.empty() && s.size() <= 64 &&
         std::all_of(s.begin(), s.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-'; });
}

// The host's GPUs as the drivers list them, numbered as CUDA and HIP number them by default.
std::size_t gpus_of_host() {
  std::error_code ec;
  std::size_t nvidia = 0;
  for (auto it = fs::directory_iterator("/proc/driver/nvidia/gpus", ec); !ec && it != fs::directory_iterator();
       it.increment(ec))
    ++nvidia;
  if (nvidia) return nvidia;
  // A kfd node with SIMD units is a GPU (the CPUs are nodes with none).
  std::size_t amd = 0;
  ec.clear();
  for (auto it = fs::directory_iterator("/sys/class/kfd/kfd/topology/nodes", ec); !ec && it != fs::directory_iterator();
       it.increment(ec)) {
    std::ifstream in(it->path() / "properties");
    std::string key, value;
    while (in >> key >> value)
      if (key == "simd_count" && value != "0") ++amd;
  }
  return amd;
}

std::vector<device_worker> gpu_workers(const std::vector<std::string>& ids) {
  std::vector<device_worker> out;
  for (const auto& id : ids) out.push_back({fmt::format("GPU {}", id), id});
  return out;
}

// The worker's command line: mqacheck's own, less what the parent decides for each worker.
std::vector<std::string> worker_arguments(const std::vector<std::string>& arguments, const fs::path& pairs,
                                          const fs::path& out, unsigned threads) {
  static const std::set<std::string> kParentOnly{"--devices", "--balance-by", "--out", "--threads", "--shard",
                                                 std::string(kWorkerPairsOption)};
  std::vector<std::string> args;
  for (std::size_t i = 1; i < arguments.size(); ++i) {
    const std::string& a = arguments[i];
    if (kParentOnly.count(a)) {
      ++i;  // and its value
      continue;
    }
    if (const auto eq = a.find('='); a.starts_with("--") && eq != std::string::npos && kParentOnly.count(a.substr(0, eq)))
      continue;
    args.push_back(a);
  }
  for (const std::string& a : {std::string(kWorkerPairsOption), pairs.string(), std::string("--out"), out.string(),
                               std::string("--threads"), std::to_string(threads)})
    args.push_back(a);
  return args;
}

// Starts this mqacheck with `args`, stdout and stderr into `log`, the device variables set and
// TMPDIR pointing into `scratch`. The worker leads a process group of its own: a Ctrl-C at the
// terminal reaches only the parent, which then ends the workers itself, each stopping its adapter
// as an interrupted run does. PR_SET_PDEATHSIG sends the worker SIGTERM when the parent dies
// without getting the chance (SIGKILL), to the same effect.
pid_t start_worker(const std::vector<std::string>& args, const device_worker& d, const fs::path& log,
                   const fs::path& scratch) {
  const std::string self = fs::read_symlink("/proc/self/exe").string();
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    const std::string_view entry(*e);
    const bool device = d.visible && std::any_of(std::begin(kDeviceVariables), std::end(kDeviceVariables),
                                                 [&](std::string_view v) { return entry.starts_with(std::string(v) + "="); });
    if (!device && !entry.starts_with("TMPDIR=")) env.emplace_back(entry);
  }
  if (d.visible)
    for (const auto v : kDeviceVariables) env.push_back(fmt::format("{}={}", v, *d.visible));
  // The worker's scratch folder (scratch.hpp reads TMPDIR) inside the parent's: a worker that dies
  // cannot remove its own, and the parent's removal then takes it along.
  env.push_back(fmt::format("TMPDIR={}", scratch.string()));
  std::vector<char*> argv{const_cast<char*>(self.c_str())}, envp;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0)
    throw input_error(fmt::format("--devices: cannot start the worker for {}: {}", d.name, std::strerror(errno)));
  if (pid == 0) {
    // The child: async-signal-safe calls only, as after any fork of a process that may have threads.
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(128 + SIGTERM);  // the parent died before the line above
    // A mask the parent holds for a moment is not the worker's (execve keeps it; the handlers it resets).
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    const int in = ::open("/dev/null", O_RDONLY);
    const int out = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (in < 0 || out < 0 || ::dup2(in, STDIN_FILENO) < 0 || ::dup2(out, STDOUT_FILENO) < 0 ||
        ::dup2(out, STDERR_FILENO) < 0)
      ::_exit(127);
    ::execve(self.c_str(), argv.data(), envp.data());
    ::_exit(127);
  }
  ::setpgid(pid, pid);  // also here, so that the group exists before the parent may signal it
  return pid;
}

// SIGTERM to each worker's process group, then every one reaped. A worker so ended stops its
// adapter (which runs in a process group of its own, kernels/external/adapter_process.cpp) on
// the way out, as it does on Ctrl-C.
void end_workers(const std::vector<pid_t>& pids) {
  for (const pid_t pid : pids) ::kill(-pid, SIGTERM);
  for (const pid_t pid : pids) {
    while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    external::release(pid);
  }
}

std::string last_lines(const fs::path& file, std::size_t count) {
  std::ifstream in(file);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  std::string out;
  for (std::size_t i = lines.size() > count ? lines.size() - count : 0; i < lines.size(); ++i)
    out += fmt::format("  | {}\n", reports::terminal_text(lines[i]));
  return out;
}

// The status a worker ended with, as a shell shows it: 128 + the signal that ended it.
int exit_status(int raw) { return WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + (WIFSIGNALED(raw) ? WTERMSIG(raw) : 0); }

// Starts one worker per part, waits for them in the order they end and reads their reports.
// The first that fails (no report) ends the others at once: their work would be thrown away.
// An interrupt ends them all; interrupted_error then leaves, after the scratch folder is removed.
std::vector<nlohmann::json> run_workers(const std::vector<verdict::shard>& parts,
                                        const std::vector<device_worker>& devices,
                                        const std::vector<std::string>& arguments, unsigned threads,
                                        std::uintmax_t scratch_bytes, int& status) {
  const external::scratch_folder scratch(scratch_bytes);
  // A worker that dies at once (SIGKILL, a crash) cannot stop its adapter: the adapter is then
  // reparented here rather than to init, and end_strays ends it. The workers themselves are spared.
  const external::child_subreaper subreaper;
  std::vector<pid_t> running;
  std::vector<pid_t> pids;
  std::vector<fs::path> logs, outs;
  try {
    for (std::size_t w = 0; w < parts.size(); ++w) {
      const fs::path pairs = scratch.path() / fmt::format("worker-{}.json", w + 1);
      io::write_atomically(io::output_file{pairs, pairs}, [&](std::ostream& out) {
        out << nlohmann::json{{"index", parts[w].index}, {"count", parts[w].count}, {"pairs", *parts[w].pairs}};
      });
      outs.push_back(scratch.path() / fmt::format("worker-{}", w + 1));
      logs.push_back(scratch.path() / fmt::format("worker-{}.log", w + 1));
      if (interrupt_guard::requested()) throw external::interrupted_error();
      pids.push_back(start_worker(worker_arguments(arguments, pairs, outs.back(), threads), devices[w], logs.back(),
                                  scratch.path()));
      external::spare(pids.back());
      running.push_back(pids.back());
    }
    std::vector<int> statuses(pids.size(), 0);
    while (!running.empty()) {
      int raw = 0;
      const pid_t ended = ::waitpid(-1, &raw, 0);
      if (ended < 0) {
        if (errno != EINTR) break;  // ECHILD: none left (not expected while `running` lists some)
        if (interrupt_guard::requested()) throw external::interrupted_error();
        continue;
      }
      const auto it = std::find(pids.begin(), pids.end(), ended);
      if (it == pids.end()) continue;  // not a worker
      running.erase(std::find(running.begin(), running.end(), ended));
      external::release(ended);
      const std::size_t w = static_cast<std::size_t>(it - pids.begin());
      statuses[w] = exit_status(raw);
      if (statuses[w] <= 2 && fs::exists(outs[w] / verdict::kReportFile)) continue;
      end_workers(running);
      running.clear();
      external::end_strays(0);  // the dead worker's adapter, orphaned
      const std::string output = last_lines(logs[w], 12);
      fmt::print(stderr, "the worker on {} ended with status {} and wrote no report; {}", devices[w].name, statuses[w],
                 output.empty() ? "it printed nothing\n" : "its output ended:\n" + output);
      throw input_error(fmt::format("--devices: the worker on {} wrote no report (exit status {}): see its output "
                                    "above; the other workers were stopped",
                                    devices[w].name, statuses[w]));
    }
    if (interrupt_guard::requested()) throw external::interrupted_error();
    std::vector<nlohmann::json> reports;
    status = 0;
    for (std::size_t w = 0; w < pids.size(); ++w) {
      status = std::max(status, statuses[w]);
      reports.push_back(verdict::read_report(outs[w] / verdict::kReportFile));
    }
    return reports;
  } catch (...) {
    // The workers still running would go on into a scratch folder about to be removed.
    end_workers(running);
    external::end_strays(0);
    throw;
  }
}

[[noreturn]] void end_devices_interrupted() {
  std::fflush(stdout);
  fmt::print(stderr, "mqacheck: interrupted: the workers and their adapters were stopped and the scratch folder "
                     "removed; no report written\n");
  interrupt_guard::reraise();
}

}  // namespace

std::vector<device_worker> parse_devices(std::string_view option, std::string_view text,
                                         const verdict::environment_lookup& env) {
  if (text.starts_with("cpu:")) {
    const std::optional<int> n = verdict::whole_number(text.substr(4));
    if (!n || *n < 1 || *n > 256)
      throw input_error(fmt::format("{} '{}': expected cpu:N with N between 1 and 256 CPU workers", option, text));
    std::vector<device_worker> out;
    for (int i = 1; i <= *n; ++i) out.push_back({fmt::format("CPU worker {}", i), std::nullopt});
    return out;
  }
  if (text == "all") {
    // Set and empty hides every device from CUDA and HIP alike: the user asked for none, which is
    // not the same as asking for all of them.
    for (const auto v : kVisibilityVariables)
      if (const auto given = env(std::string(v)); given && given->empty())
        throw input_error(fmt::format("{} all: {} is set and empty, which leaves no device visible: unset it to "
                                      "use every GPU of the host, or list the devices in it (e.g. 0,1)",
                                      option, v));
    const auto listed = [&](std::string_view v) -> std::optional<std::vector<std::string>> {
      const auto given = env(std::string(v));
      if (!given) return std::nullopt;
      std::vector<std::string> ids = split_list(*given);
      if (!std::all_of(ids.begin(), ids.end(), device_id))
        throw input_error(fmt::format("{} all: {}='{}': expected device numbers or ids separated by commas", option,
                                      v, *given));
      return ids;
    };
    for (const auto v : kDeviceVariables)
      if (const auto ids = listed(v)) return gpu_workers(*ids);
    // ROCR_VISIBLE_DEVICES filters first and HIP_VISIBLE_DEVICES indexes into what remains: ROCm's
    // "GPU isolation techniques" page (rocm.docs.amd.com, conceptual/gpu-isolation) puts the first
    // in the ROCm runtime under every application of the user-mode stack and the second (or
    // CUDA_VISIBLE_DEVICES) in the HIP runtime above it, as "device indices exposed to HIP
    // applications"; HIP counts only the devices the runtime beneath it exposes. So the workers
    // keep ROCR_VISIBLE_DEVICES as it is and get HIP_VISIBLE_DEVICES and CUDA_VISIBLE_DEVICES
    // 0..k-1, each the position of its device in that list.
    if (const auto ids = listed("ROCR_VISIBLE_DEVICES")) {
      std::vector<device_worker> out;
      for (std::size_t i = 0; i < ids->size(); ++i)
        out.push_back({fmt::format("GPU {} (ROCR_VISIBLE_DEVICES entry {})", (*ids)[i], i), std::to_string(i)});
      return out;
    }
    const std::size_t gpus = gpus_of_host();
    if (gpus == 0)
      throw input_error(fmt::format("{} all: no GPU on this host (none in /proc/driver/nvidia/gpus or "
                                    "/sys/class/kfd; CUDA_VISIBLE_DEVICES, HIP_VISIBLE_DEVICES and "
                                    "ROCR_VISIBLE_DEVICES unset): run without --devices, or give CPU workers as "
                                    "--devices cpu:N",
                                    option));
    std::vector<std::string> ids;
    for (std::size_t i = 0; i < gpus; ++i) ids.push_back(std::to_string(i));
    return gpu_workers(ids);
  }
  const std::vector<std::string> ids = split_list(text);
  std::set<std::string> seen;
  for (const auto& id : ids) {
    if (!device_id(id))
      throw input_error(fmt::format("{} '{}': expected all, cpu:N, or device numbers separated by commas (e.g. 0,1,3)",
                                    option, text));
    if (!seen.insert(id).second)
      throw input_error(fmt::format("{} '{}': device {} is given twice: one worker per device", option, text, id));
  }
  return gpu_workers(ids);
}

verdict::shard read_worker_pairs(const std::string& file) {
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  try {
    const nlohmann::json j = nlohmann::json::parse(text.str());
    verdict::shard s;
    s.index = j.at("index").get<int>();
    s.count = j.at("count").get<int>();
    s.pairs = j.at("pairs").get<std::vector<std::size_t>>();
    std::sort(s.pairs->begin(), s.pairs->end());
    if (s.count < 1 || s.index < 1 || s.index > s.count) throw std::out_of_range("index");
    return s;
  } catch (const std::exception&) {
    throw input_error(fmt::format("{} {}: expected the worker's pairs as `run --devices` writes them", kWorkerPairsOption,
                                  file));
  }
}

nlohmann::json read_balance_report(const std::string& given, const cases::suite& s) {
  nlohmann::json report = verdict::read_report(given);
  if (report.at("suite") != s.name)
    throw input_error(fmt::format("--balance-by {}: a report of suite '{}', and the run is of suite '{}': its timings "
                                  "weigh the cases of the same suite",
                                  given, report.at("suite").get<std::string>(), s.name));
  return report;
}

devices_run run_on_devices(const cases::suite& s, const run_flags& f, const std::vector<device_worker>& devices,
                           const std::vector<std::string>& arguments, const nlohmann::json* timed) {
  const std::size_t variants = f.kernel.command.empty() ? verdict::select_variants(s, f.variants).size() : 1;
  std::vector<double> costs;
  if (timed) costs = verdict::measured_costs(s.cases, *timed);
  else
    for (const auto& c : s.cases) costs.push_back(verdict::estimated_cost(c));
  const std::vector<verdict::shard> parts =
      verdict::balance_cases(costs, variants, static_cast<int>(devices.size()));
  const std::vector<double> part_costs = verdict::shard_costs(parts, costs, variants);
  double total = 0;
  for (const double c : part_costs) total += c;
  for (std::size_t w = 0; w < parts.size(); ++w)
    fmt::print("{}: {} cases, {} pairs, {:.0f}% of the {} work\n", devices[w].name,
               parts[w].pairs->size() / std::max<std::size_t>(variants, 1), parts[w].pairs->size(),
               total > 0 ? 100 * part_costs[w] / total : 0.0, timed ? "measured" : "estimated");
  std::fflush(stdout);
  const unsigned threads =
      f.threads ? f.threads
                : std::max(1u, std::thread::hardware_concurrency() / static_cast<unsigned>(parts.size()));

  devices_run run;
  run.workers = parts.size();
  std::vector<nlohmann::json> reports;
  const interrupt_guard guard;  // before the first worker starts: a signal meanwhile is acted on
  try {
    // The workers' scratch folders are made in this one (start_worker), all at once: room for each.
    const std::uintmax_t scratch_bytes =
        f.kernel.command.empty()
            ? 0
            : parts.size() * verdict::scratch_bytes_per_case(s, f.kernel.timing_launches, f.kernel.topk_indices);
    reports = run_workers(parts, devices, arguments, threads, scratch_bytes, run.status);
  } catch (const external::interrupted_error&) {
    // The workers were ended and reaped, and the scratch folder removed, while the exception left.
    end_devices_interrupted();
  }
  std::vector<verdict::named_report> named;
  for (std::size_t w = 0; w < reports.size(); ++w) named.push_back({devices[w].name, &reports[w]});
  run.report = verdict::merge_shards(named);
  // A signal while the reports were merged: the guard noted it, and the user asked for no report.
  if (interrupt_guard::requested()) end_devices_interrupted();
  return run;
}

}  // namespace mqa::cli
