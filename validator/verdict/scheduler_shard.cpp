#include "scheduler_shard.hpp"

#include <fmt/core.h>

#include <array>
#include <cstdlib>
#include <vector>

#include "validator/input_error.hpp"

namespace mqa::verdict {
namespace {

// One scheduler's variables. The task's 0-based position is index - first, where first is the
// value of `first_variable` when the scheduler names the lowest index (Slurm arrays may start
// anywhere: --array=5-8), else `first_index`.
struct scheduler_variables {
  std::string_view name;         // recorded in the report
  std::string_view what;         // for messages
  std::string_view index;        // the task's index
  std::string_view count;        // the number of tasks; empty: given as --shard auto/N
  std::string_view first_variable;  // empty: the first task's index is first_index
  int first_index = 0;
  std::string_view step;  // empty: no stride; else it must be 1 when set
};

constexpr std::array<scheduler_variables, 4> kSchedulers{{
    {"slurm", "a Slurm job array", "SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_COUNT", "SLURM_ARRAY_TASK_MIN", 0,
     "SLURM_ARRAY_TASK_STEP"},
    {"kubernetes", "a Kubernetes Indexed Job", "JOB_COMPLETION_INDEX", "", "", 0, ""},
    {"buildkite", "Buildkite parallelism", "BUILDKITE_PARALLEL_JOB", "BUILDKITE_PARALLEL_JOB_COUNT", "", 0, ""},
    {"gitlab", "GitLab parallel", "CI_NODE_INDEX", "CI_NODE_TOTAL", "", 1, ""},
}};

std::string every_index_variable() {
  std::string out;
  for (const auto& s : kSchedulers) out += fmt::format("{}{} ({})", out.empty() ? "" : ", ", s.index, s.what);
  return out;
}

class scheduler_reading {
 public:
  scheduler_reading(std::string_view option, std::string_view text, const scheduler_variables& s,
                    const environment_lookup& env)
      : option_(option), text_(text), s_(s), env_(env) {
    source_.scheduler = std::string(s.name);
  }

  // A variable of the scheduler's that must be set, as a whole number.
  long number(std::string_view name) {
    const std::string key(name);
    const std::optional<std::string> value = env_(key);
    if (!value || value->empty())
      fail(fmt::format("{} is set but {} is not: both are needed", s_.index, key));
    source_.variables[key] = *value;
    const auto n = whole_number(*value);
    if (!n || *n < 0) fail(fmt::format("{}='{}': expected a whole number", key, *value));
    return *n;
  }

  [[noreturn]] void fail(const std::string& why) const {
    throw input_error(fmt::format("{} {}, from {}: {}", option_, text_, s_.what, why));
  }

  shard_source source_;

 private:
  std::string_view option_, text_;
  const scheduler_variables& s_;
  const environment_lookup& env_;
};

}  // namespace

bool is_auto_shard(std::string_view text) { return text == "auto" || text.starts_with("auto/"); }

shard resolve_auto_shard(std::string_view option, std::string_view text, const environment_lookup& env) {
  std::optional<int> given_count;
  if (text != "auto") {
    const auto n = whole_number(text.substr(5));
    if (!n || *n < 1 || *n > kMaxShards)
      throw input_error(fmt::format("{} '{}': expected auto, or auto/N with N between 1 and {} (the number of tasks, "
                                    "where the scheduler does not give it)",
                                    option, text, kMaxShards));
    given_count = static_cast<int>(*n);
  }
  std::vector<const scheduler_variables*> set;
  for (const auto& s : kSchedulers)
    if (const auto v = env(std::string(s.index)); v && !v->empty()) set.push_back(&s);
  if (set.empty())
    throw input_error(fmt::format("{} {}: no scheduler's task index is set in the environment: expected one of {}; "
                                  "outside a scheduler give --shard I/N",
                                  option, text, every_index_variable()));
  if (set.size() > 1) {
    std::string which;
    for (std::size_t i = 0; i < set.size(); ++i)
      which += fmt::format("{}{}={} ({})", i == 0 ? "" : i + 1 == set.size() ? " and " : ", ", set[i]->index,
                           *env(std::string(set[i]->index)), set[i]->what);
    throw input_error(fmt::format("{} {}: {} are {} set: which one shards this run is ambiguous; unset all but one, "
                                  "or give --shard I/N",
                                  option, text, which, set.size() == 2 ? "both" : "all"));
  }
  const scheduler_variables& s = *set.front();
  scheduler_reading r(option, text, s, env);
  const long index = r.number(s.index);
  const long first = s.first_variable.empty() ? s.first_index : r.number(s.first_variable);
  if (!s.step.empty())
    if (const auto step = env(std::string(s.step)); step && !step->empty()) {
      r.source_.variables[std::string(s.step)] = *step;
      if (*step != "1")
        r.fail(fmt::format("{}={}: an array with a stride has gaps between its tasks; use a contiguous range "
                           "(--array=0-3)",
                           s.step, *step));
    }
  long count = 0;
  if (s.count.empty()) {
    if (!given_count)
      r.fail(fmt::format("{} gives the task's index only: give the number of tasks as --shard auto/N (the Job's "
                         "completions)",
                         s.index));
    count = *given_count;
  } else {
    count = r.number(s.count);
    if (given_count && *given_count != count)
      r.fail(fmt::format("--shard auto/{} but {}={}: the counts disagree (plain --shard auto takes the scheduler's)",
                         *given_count, s.count, count));
  }
  if (count < 1 || count > kMaxShards)
    r.fail(fmt::format("{} tasks: expected between 1 and {}", count, kMaxShards));
  if (index < first || index - first >= count)
    r.fail(fmt::format("task index {} is not one of the {} tasks numbered from {}{}", index, count, first,
                       s.first_variable.empty() ? "" : fmt::format(" ({})", s.first_variable)));
  shard out;
  out.index = static_cast<int>(index - first) + 1;
  out.count = static_cast<int>(count);
  out.source = r.source_;
  return out;
}

shard shard_of_option(std::string_view option, std::string_view text, const environment_lookup& env) {
  return is_auto_shard(text) ? resolve_auto_shard(option, text, env) : parse_shard(option, text);
}

std::optional<std::string> process_environment(const std::string& name) {
  const char* value = std::getenv(name.c_str());
  if (!value) return std::nullopt;
  return std::string(value);
}

std::string describe(const shard_source& source) {
  std::string vars;
  for (const auto& [name, value] : source.variables) vars += fmt::format("{}{}={}", vars.empty() ? "" : ", ", name, value);
  return fmt::format("{}: {}", source.scheduler, vars);
}

}  // namespace mqa::verdict
