// `run --shard auto`: the shard a batch scheduler gave this task, read from the variables it sets
// in each task's environment, so that one command line serves every task of a Slurm job array, a
// Kubernetes Indexed Job or a CI's parallel steps. The schedulers are a table (scheduler_shard.cpp);
// each gives a task index and, except Kubernetes, the number of tasks. The shard is 1 + the
// task's 0-based position, of N = the number of tasks (shard.hpp).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "validator/verdict/shard.hpp"

namespace mqa::verdict {

// The value of an environment variable; nullopt where it is unset.
using environment_lookup = std::function<std::optional<std::string>(const std::string& name)>;

// True for "auto" and "auto/N": the shard is the scheduler's.
bool is_auto_shard(std::string_view text);

// The shard of `text` ("auto", or "auto/N" where the scheduler gives no count) from `env`, with
// its source recorded. input_error naming `option` and the variables when no scheduler's index is
// set, when two schedulers' are, or when the values are not whole numbers or disagree (an index
// past the count, a count other than N).
shard resolve_auto_shard(std::string_view option, std::string_view text, const environment_lookup& env);

// "I/N" (parse_shard) or "auto[/N]" (resolve_auto_shard).
shard shard_of_option(std::string_view option, std::string_view text, const environment_lookup& env);

// The process's own environment.
std::optional<std::string> process_environment(const std::string& name);

// "slurm: SLURM_ARRAY_TASK_ID=1, SLURM_ARRAY_TASK_COUNT=4": what a run prints of its source.
std::string describe(const shard_source& source);

}  // namespace mqa::verdict
