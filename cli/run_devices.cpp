#include "run_devices.hpp"

#include <fcntl.h>
#include <fmt/core.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "reports/escape.hpp"
#include "validator/external/scratch.hpp"
#include "validator/input_error.hpp"
#include "validator/verdict/balance.hpp"
#include "validator/verdict/merge.hpp"
#include "validator/verdict/read_report.hpp"
#include "validator/verdict/verdict.hpp"

extern char** environ;

namespace mqa::cli {
namespace {

namespace fs = std::filesystem;

// The variables each GPU worker gets, both set: CUDA reads the first, ROCm's HIP the second.
constexpr std::string_view kDeviceVariables[] = {"CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES"};

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

// Starts this mqacheck with `args`, stdout and stderr into `log`, the device variables set.
pid_t start_worker(const std::vector<std::string>& args, const device_worker& d, const fs::path& log) {
  const std::string self = fs::read_symlink("/proc/self/exe").string();
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    const std::string_view entry(*e);
    const bool replaced = d.visible && std::any_of(std::begin(kDeviceVariables), std::end(kDeviceVariables),
                                                   [&](std::string_view v) { return entry.starts_with(std::string(v) + "="); });
    if (!replaced) env.emplace_back(entry);
  }
  if (d.visible)
    for (const auto v : kDeviceVariables) env.push_back(fmt::format("{}={}", v, *d.visible));
  std::vector<char*> argv{const_cast<char*>(self.c_str())}, envp;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  pid_t pid = 0;
  const int error = posix_spawn(&pid, self.c_str(), &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (error) throw input_error(fmt::format("--devices: cannot start the worker for {}: {}", d.name, std::strerror(error)));
  return pid;
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

}  // namespace

std::vector<device_worker> parse_devices(std::string_view option, std::string_view text,
                                         const verdict::environment_lookup& env) {
  if (text.starts_with("cpu:")) {
    int n = 0;
    const std::string_view count = text.substr(4);
    const auto [end, ec] = std::from_chars(count.data(), count.data() + count.size(), n);
    if (ec != std::errc() || end != count.data() + count.size() || n < 1 || n > 256)
      throw input_error(fmt::format("{} '{}': expected cpu:N with N between 1 and 256 CPU workers", option, text));
    std::vector<device_worker> out;
    for (int i = 1; i <= n; ++i) out.push_back({fmt::format("CPU worker {}", i), std::nullopt});
    return out;
  }
  if (text == "all") {
    for (const auto v : kDeviceVariables)
      if (const auto given = env(std::string(v)); given && !given->empty()) {
        const std::vector<std::string> ids = split_list(*given);
        if (std::all_of(ids.begin(), ids.end(), device_id)) return gpu_workers(ids);
        throw input_error(fmt::format("{} all: {}='{}': expected device numbers or ids separated by commas", option, v,
                                      *given));
      }
    const std::size_t gpus = gpus_of_host();
    if (gpus == 0)
      throw input_error(fmt::format("{} all: no GPU on this host (none in /proc/driver/nvidia/gpus or "
                                    "/sys/class/kfd, CUDA_VISIBLE_DEVICES and HIP_VISIBLE_DEVICES unset): run without "
                                    "--devices, or give CPU workers as --devices cpu:N",
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

nlohmann::json run_on_devices(const cases::suite& s, const run_flags& f, const std::vector<device_worker>& devices,
                              const std::vector<std::string>& arguments, const nlohmann::json* timed, int& status) {
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
  const unsigned threads =
      f.threads ? f.threads
                : std::max(1u, std::thread::hardware_concurrency() / static_cast<unsigned>(parts.size()));

  const external::scratch_folder scratch(0);
  std::vector<pid_t> pids;
  std::vector<fs::path> logs, outs;
  for (std::size_t w = 0; w < parts.size(); ++w) {
    const fs::path pairs = scratch.path() / fmt::format("worker-{}.json", w + 1);
    std::ofstream(pairs) << nlohmann::json{{"index", parts[w].index}, {"count", parts[w].count}, {"pairs", *parts[w].pairs}};
    outs.push_back(scratch.path() / fmt::format("worker-{}", w + 1));
    logs.push_back(scratch.path() / fmt::format("worker-{}.log", w + 1));
    const std::size_t cases = parts[w].pairs->size() / std::max<std::size_t>(variants, 1);
    fmt::print("{}: {} cases, {} pairs, {:.0f}% of the {} work\n", devices[w].name, cases,
               parts[w].pairs->size(), total > 0 ? 100 * part_costs[w] / total : 0.0, timed ? "measured" : "estimated");
    try {
      pids.push_back(start_worker(worker_arguments(arguments, pairs, outs.back(), threads), devices[w], logs.back()));
    } catch (const input_error&) {
      // The workers already started would run on into a scratch folder about to be removed.
      for (const pid_t started : pids) {
        ::kill(started, SIGTERM);
        ::waitpid(started, nullptr, 0);
      }
      throw;
    }
  }
  std::fflush(stdout);
  std::vector<int> statuses(pids.size(), 0);
  for (std::size_t w = 0; w < pids.size(); ++w) {
    int raw = 0;
    while (::waitpid(pids[w], &raw, 0) < 0 && errno == EINTR) {
    }
    statuses[w] = WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + (WIFSIGNALED(raw) ? WTERMSIG(raw) : 0);
  }
  std::vector<nlohmann::json> reports;
  status = 0;
  for (std::size_t w = 0; w < pids.size(); ++w) {
    const fs::path report = outs[w] / verdict::kReportFile;
    if (statuses[w] > 2 || !fs::exists(report)) {
      const std::string output = last_lines(logs[w], 12);
      fmt::print(stderr, "the worker on {} ended with status {} and wrote no report; {}", devices[w].name, statuses[w],
                 output.empty() ? "it printed nothing\n" : "its output ended:\n" + output);
      throw input_error(fmt::format("--devices: the worker on {} wrote no report (exit status {}): see its output above",
                                    devices[w].name, statuses[w]));
    }
    status = std::max(status, statuses[w]);
    reports.push_back(verdict::read_report(report));
  }
  std::vector<verdict::named_report> named;
  for (std::size_t w = 0; w < reports.size(); ++w) named.push_back({devices[w].name, &reports[w]});
  return verdict::merge_shards(named);
}

}  // namespace mqa::cli
