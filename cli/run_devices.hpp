// `mqacheck run --devices all|0,1,...|cpu:N`: the suite over every GPU of a host. The cases are
// split by estimated cost (validator/verdict/balance.hpp), and mqacheck runs itself once per
// device as a worker over its share, with CUDA_VISIBLE_DEVICES and HIP_VISIBLE_DEVICES naming
// that one device: the built-in GPU variants and a --kernel adapter alike see it as their only
// GPU. The workers' reports are merged (validator/verdict/merge.hpp) into the one report the
// run writes. `cpu:N` starts N workers that change no device variable: CPU stand-ins, for
// machines without GPUs and for the tests of the split.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "run_command.hpp"
#include "validator/case/case.hpp"
#include "validator/verdict/scheduler_shard.hpp"

namespace mqa::cli {

struct device_worker {
  std::string name;                    // "GPU 1", "CPU worker 2"
  std::optional<std::string> visible;  // the device variables' value; unset: a CPU stand-in
};

// The workers of `text`. `all`: the devices in CUDA_VISIBLE_DEVICES or HIP_VISIBLE_DEVICES when
// set; else one per entry of ROCR_VISIBLE_DEVICES when set (each worker gets its position in that
// list, which HIP numbers from 0); else every NVIDIA GPU (/proc/driver/nvidia/gpus) or AMD GPU
// (/sys/class/kfd) of the host. input_error when one of the three is set and empty (no device is
// visible), or naming what was looked at when there is no GPU. `0,2`: those devices, each once.
// `cpu:N`: N CPU stand-ins (1 <= N <= 256).
std::vector<device_worker> parse_devices(std::string_view option, std::string_view text,
                                         const verdict::environment_lookup& env);

// The run of `s` with `f` split over `devices`: the merged report, as `run` alone would write it
// apart from its timings; `status` is the workers' worst exit status; `workers` how many were
// started (no more than the suite has cases). `arguments` is mqacheck's command line; each worker
// gets it without --devices, --balance-by, --out, --threads and --shard. Throws input_error
// (naming the worker and its log's last lines) when a worker writes no report, after ending the
// others. On SIGINT, SIGTERM or SIGHUP every worker and its adapter is ended, the scratch folder
// removed, and mqacheck ends by the signal. `timed`: a report of an earlier run of the suite
// whose timings weigh the cases (verdict::measured_costs); null: the estimates.
struct devices_run {
  nlohmann::json report;
  int status = 0;
  std::size_t workers = 0;
};
devices_run run_on_devices(const cases::suite& s, const run_flags& f, const std::vector<device_worker>& devices,
                           const std::vector<std::string>& arguments, const nlohmann::json* timed);

// The report of --balance-by, read and checked: input_error when it is no report of suite `s`.
nlohmann::json read_balance_report(const std::string& given, const cases::suite& s);

// The hidden option a worker gets its pairs by, and reading them back.
inline constexpr std::string_view kWorkerPairsOption = "--worker-pairs";
verdict::shard read_worker_pairs(const std::string& file);

}  // namespace mqa::cli
