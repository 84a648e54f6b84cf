// `run --shard auto` (validator/verdict/scheduler_shard.hpp): each scheduler's variables give the
// shard they mean, its source recorded; none, two, or values that disagree are one message naming
// the variables.
#include <catch2/catch.hpp>

#include <map>

#include "validator/input_error.hpp"
#include "validator/verdict/scheduler_shard.hpp"

using namespace mqa;

namespace {

verdict::environment_lookup environment(std::map<std::string, std::string> vars) {
  return [vars](const std::string& name) -> std::optional<std::string> {
    const auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

std::string refusal(const char* text, std::map<std::string, std::string> vars) {
  try {
    verdict::resolve_auto_shard("--shard", text, environment(std::move(vars)));
  } catch (const input_error& e) {
    return e.what();
  }
  return "(accepted)";
}

}  // namespace

TEST_CASE("run --shard auto reads each scheduler's task variables", "[verdict][shard]") {
  struct row {
    const char* text;
    std::map<std::string, std::string> vars;
    const char* scheduler;
    int index, count;
  };
  const auto r = GENERATE(values<row>({
      {"auto", {{"SLURM_ARRAY_TASK_ID", "0"}, {"SLURM_ARRAY_TASK_COUNT", "4"}, {"SLURM_ARRAY_TASK_MIN", "0"}}, "slurm", 1, 4},
      {"auto", {{"SLURM_ARRAY_TASK_ID", "8"}, {"SLURM_ARRAY_TASK_COUNT", "4"}, {"SLURM_ARRAY_TASK_MIN", "5"}}, "slurm", 4, 4},
      {"auto", {{"SLURM_ARRAY_TASK_ID", "2"}, {"SLURM_ARRAY_TASK_COUNT", "3"}, {"SLURM_ARRAY_TASK_MIN", "0"},
                {"SLURM_ARRAY_TASK_STEP", "1"}}, "slurm", 3, 3},
      {"auto/5", {{"JOB_COMPLETION_INDEX", "4"}}, "kubernetes", 5, 5},
      {"auto/5", {{"JOB_COMPLETION_INDEX", "0"}}, "kubernetes", 1, 5},
      {"auto", {{"BUILDKITE_PARALLEL_JOB", "1"}, {"BUILDKITE_PARALLEL_JOB_COUNT", "2"}}, "buildkite", 2, 2},
      {"auto/2", {{"BUILDKITE_PARALLEL_JOB", "1"}, {"BUILDKITE_PARALLEL_JOB_COUNT", "2"}}, "buildkite", 2, 2},
      {"auto", {{"CI_NODE_INDEX", "1"}, {"CI_NODE_TOTAL", "3"}}, "gitlab", 1, 3},
      {"auto", {{"CI_NODE_INDEX", "3"}, {"CI_NODE_TOTAL", "3"}, {"CI_NODE_INDEX_UNRELATED", "x"}}, "gitlab", 3, 3},
  }));
  const verdict::shard s = verdict::shard_of_option("--shard", r.text, environment(r.vars));
  CAPTURE(r.text, r.scheduler);
  CHECK(s.index == r.index);
  CHECK(s.count == r.count);
  REQUIRE(s.source);
  CHECK(s.source->scheduler == r.scheduler);
  for (const auto& [name, value] : s.source->variables) CHECK(r.vars.at(name) == value);
  CHECK(!s.pairs);
}

TEST_CASE("run --shard auto refuses no scheduler, two, and variables that disagree, naming them", "[verdict][shard]") {
  struct row {
    const char* text;
    std::map<std::string, std::string> vars;
    std::vector<const char*> says;
  };
  const auto r = GENERATE(values<row>({
      {"auto", {}, {"no scheduler's task index", "SLURM_ARRAY_TASK_ID", "JOB_COMPLETION_INDEX", "BUILDKITE_PARALLEL_JOB",
                    "CI_NODE_INDEX", "--shard I/N"}},
      {"auto", {{"SLURM_ARRAY_TASK_ID", ""}}, {"no scheduler's task index"}},
      {"auto", {{"SLURM_ARRAY_TASK_ID", "1"}, {"CI_NODE_INDEX", "1"}, {"CI_NODE_TOTAL", "2"}},
       {"SLURM_ARRAY_TASK_ID=1 (a Slurm job array) and CI_NODE_INDEX=1", "are both set", "ambiguous"}},
      {"auto", {{"SLURM_ARRAY_TASK_ID", "1"}, {"JOB_COMPLETION_INDEX", "0"}, {"CI_NODE_INDEX", "1"}},
       {"SLURM_ARRAY_TASK_ID=1 (a Slurm job array), JOB_COMPLETION_INDEX=0", "and CI_NODE_INDEX=1", "are all set",
        "unset all but one"}},
      {"auto", {{"SLURM_ARRAY_TASK_ID", "1"}, {"SLURM_ARRAY_TASK_MIN", "0"}},
       {"SLURM_ARRAY_TASK_COUNT is not", "Slurm job array"}},
      {"auto", {{"SLURM_ARRAY_TASK_ID", "1"}, {"SLURM_ARRAY_TASK_COUNT", "4"}}, {"SLURM_ARRAY_TASK_MIN is not"}},
      {"auto", {{"SLURM_ARRAY_TASK_ID", "x1"}, {"SLURM_ARRAY_TASK_COUNT", "4"}, {"SLURM_ARRAY_TASK_MIN", "0"}},
       {"SLURM_ARRAY_TASK_ID='x1': expected a whole number"}},
      {"auto", {{"SLURM_ARRAY_TASK_ID", "6"}, {"SLURM_ARRAY_TASK_COUNT", "4"}, {"SLURM_ARRAY_TASK_MIN", "0"},
                {"SLURM_ARRAY_TASK_STEP", "2"}}, {"SLURM_ARRAY_TASK_STEP=2", "contiguous"}},
      {"auto", {{"SLURM_ARRAY_TASK_ID", "4"}, {"SLURM_ARRAY_TASK_COUNT", "4"}, {"SLURM_ARRAY_TASK_MIN", "0"}},
       {"task index 4 is not one of the 4 tasks numbered from 0"}},
      {"auto", {{"JOB_COMPLETION_INDEX", "1"}}, {"JOB_COMPLETION_INDEX gives the task's index only", "auto/N"}},
      {"auto/2", {{"JOB_COMPLETION_INDEX", "2"}}, {"task index 2 is not one of the 2 tasks"}},
      {"auto/3", {{"BUILDKITE_PARALLEL_JOB", "1"}, {"BUILDKITE_PARALLEL_JOB_COUNT", "2"}},
       {"--shard auto/3 but BUILDKITE_PARALLEL_JOB_COUNT=2", "disagree"}},
      {"auto/x", {{"CI_NODE_INDEX", "1"}, {"CI_NODE_TOTAL", "2"}}, {"expected auto, or auto/N"}},
      {"auto/0", {{"JOB_COMPLETION_INDEX", "0"}}, {"expected auto, or auto/N"}},
      {"auto", {{"CI_NODE_INDEX", "0"}, {"CI_NODE_TOTAL", "2"}}, {"task index 0 is not one of the 2 tasks numbered from 1"}},
      {"auto", {{"CI_NODE_INDEX", "1"}, {"CI_NODE_TOTAL", "0"}}, {"0 tasks: expected between 1 and 10000"}},
  }));
  const std::string message = refusal(r.text, r.vars);
  CAPTURE(r.text, message);
  CHECK(message.starts_with("--shard "));
  for (const char* part : r.says) CHECK(message.find(part) != std::string::npos);
}

TEST_CASE("a shard with its own pairs owns exactly those", "[verdict][shard]") {
  verdict::shard s;
  s.index = 2;
  s.count = 3;
  s.pairs = std::vector<std::size_t>{0, 4, 5, 9};
  for (std::size_t pair = 0; pair < 12; ++pair) CHECK(s.owns(pair) == (pair == 0 || pair == 4 || pair == 5 || pair == 9));
}
