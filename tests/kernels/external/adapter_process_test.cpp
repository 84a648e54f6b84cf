// The adapter process on /bin/sh one-liners that do, quickly and deterministically, what a real
// adapter does wrong: hang, crash, exit, break the one-line rule, never read. After each, mqacheck
// must still be alive, the process reaped, its group gone and no file descriptor left open.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <thread>

#include "kernels/external/adapter_process.hpp"
#include "kernels/external/strays.hpp"

using namespace mqa::external;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

std::set<std::string> pipe_links() {
  std::set<std::string> pipes;
  for (const auto& e : fs::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    const std::string target = fs::read_symlink(e.path(), ec).string();
    if (target.starts_with("pipe:")) pipes.insert(target);
  }
  return pipes;
}

// Gone, or a zombie its new parent has yet to reap: either way no longer running.
bool ended(pid_t pid) {
  if (::kill(pid, 0) != 0) return true;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string pid_field, name, state;
  stat >> pid_field >> name >> state;
  return state == "Z" || state == "X";
}

struct adapter_fixture {
  // A file the shell one-liners write a pid to.
  fs::path log = fs::temp_directory_path() / ("mqa-adapter-test-" + std::to_string(::getpid()) + ".pid");
  ~adapter_fixture() { fs::remove(log); }
  process_options options(std::string command) const {
    process_options o;
    o.command = std::move(command);
    o.exit_grace = 2000ms;
    return o;
  }
  pid_t logged_pid() const {
    pid_t pid = 0;
    std::ifstream(log) >> pid;
    return pid;
  }
};

void wait_until_ended(pid_t pid) {
  for (int i = 0; i < 300 && !ended(pid); ++i) std::this_thread::sleep_for(10ms);
}

const std::string kRequest = "{\"bundle\": \"b\", \"out\": \"o\", \"launch\": 1}\n";

}  // namespace

TEST_CASE("an adapter that answers: one line per request, stdin closed at the end", "[external][process]") {
  adapter_fixture f;
  const std::size_t fds_before = pipe_links().size();
  pid_t pid = 0;
  {
    adapter_process p(f.options(R"(while read line; do echo "{\"ok\": true, \"seen\": $line}"; done)"));
    pid = p.pid();
    for (int i = 0; i < 3; ++i) {
      const exchange_result r = p.exchange(kRequest, clock::now() + 5s);
      REQUIRE(r.status == exchange_status::answered);
      CHECK(r.line == "{\"ok\": true, \"seen\": {\"bundle\": \"b\", \"out\": \"o\", \"launch\": 1}}");
    }
    CHECK(p.stop() == "stdin closed: exited with status 0");
    CHECK(p.exited_cleanly());
    CHECK_FALSE(p.running());
  }
  int status = 0;
  CHECK(::waitpid(pid, &status, WNOHANG) == -1);  // reaped: no zombie of ours
  CHECK(pipe_links().size() == fds_before);
}

TEST_CASE("an answer written in pieces is one line; CR LF is accepted", "[external][process]") {
  adapter_fixture f;
  adapter_process p(f.options(R"(read line; printf '{"ok":'; sleep 0.1; printf ' true}\r\n'; read line)"));
  const exchange_result r = p.exchange(kRequest, clock::now() + 5s);
  REQUIRE(r.status == exchange_status::answered);
  CHECK(r.line == "{\"ok\": true}");
}

TEST_CASE("the adapter's environment makes Python's stdout unbuffered", "[external][process]") {
  adapter_fixture f;
  adapter_process p(f.options(R"(read line; echo "$PYTHONUNBUFFERED")"));
  const exchange_result r = p.exchange(kRequest, clock::now() + 5s);
  REQUIRE(r.status == exchange_status::answered);
  CHECK(r.line == "1");
}

TEST_CASE("a hanging adapter is killed at the deadline, with what it started", "[external][process]") {
  adapter_fixture f;
  const fs::path child_pid = f.log.string() + ".child";
  adapter_process p(f.options("read line; sleep 30 & echo $! > '" + child_pid.string() + "'; wait"));
  const auto start = clock::now();
  const exchange_result r = p.exchange(kRequest, clock::now() + 300ms);
  CHECK(r.status == exchange_status::timed_out);
  CHECK(r.problem.find("killed by signal 9") != std::string::npos);
  CHECK(clock::now() - start < 3s);
  CHECK_FALSE(p.running());
  pid_t sleeper = 0;
  std::ifstream(child_pid) >> sleeper;
  fs::remove(child_pid);
  REQUIRE(sleeper > 0);
  for (int i = 0; i < 200 && !ended(sleeper); ++i) std::this_thread::sleep_for(10ms);
  CHECK(ended(sleeper));  // the process group went, not the shell alone
}

TEST_CASE("an adapter that never reads its stdin cannot block mqacheck", "[external][process]") {
  adapter_fixture f;
  adapter_process p(f.options("sleep 30"));
  const std::string big(1 << 20, 'x');  // far past a pipe's 64 KiB
  const auto start = clock::now();
  const exchange_result r = p.exchange(big + "\n", clock::now() + 300ms);
  CHECK(r.status == exchange_status::timed_out);
  CHECK(clock::now() - start < 3s);
}

TEST_CASE("crashes and exits are described, and mqacheck survives the broken pipe", "[external][process]") {
  adapter_fixture f;
  // `gone`: it ended before the request reached it; `ended`: while the request was its to answer.
  const auto [command, status, words] = GENERATE(table<std::string, exchange_status, std::string>({
      {"read line; kill -SEGV $$", exchange_status::ended, "killed by signal 11 (SIGSEGV"},
      {"read line; exit 3", exchange_status::ended, "exited with status 3"},
      {"read line; sh -c 'kill -ABRT $$'", exchange_status::ended,
       "exited with status 134 (the shell's 128 + 6: its command was killed by signal 6 (SIGABRT"},
      {"read line; printf '{\"ok\": tr'", exchange_status::ended, "closed its stdout in the middle of a line: '{\"ok\": tr'"},
      {"no-such-adapter-command-xyz", exchange_status::gone, "exited with status 127 (the shell's 'command not found')"},
      {"exit 0", exchange_status::gone, "exited with status 0"},
      {"exec 0<&- 1>&-; sleep 0.2", exchange_status::gone, "closed its std"},
  }));
  CAPTURE(command);
  adapter_process p(f.options(command));
  std::this_thread::sleep_for(100ms);  // let the quick ones end before the request: EOF, or EPIPE on the write
  const exchange_result r = p.exchange(kRequest, clock::now() + 5s);
  CHECK(r.status == status);
  CAPTURE(r.problem);
  CHECK(r.problem.find(words) != std::string::npos);
  CHECK_FALSE(p.running());
  sigset_t pending;
  sigpending(&pending);
  CHECK_FALSE(sigismember(&pending, SIGPIPE));  // consumed, not left for someone else
  // The next exchange with a dead adapter is an outcome too, not a crash.
  CHECK(p.exchange(kRequest, clock::now() + 1s).status == exchange_status::gone);
}

TEST_CASE("output that breaks the one-line rule", "[external][process]") {
  adapter_fixture f;
  SECTION("two lines for one request") {
    adapter_process p(f.options(R"(read line; printf '{"ok": true}\n{"ok": true}\n'; read line)"));
    const exchange_result r = p.exchange(kRequest, clock::now() + 5s);
    CHECK(r.status == exchange_status::violated);
    CHECK(r.problem.find("answered more than one line") != std::string::npos);
    CHECK_FALSE(p.running());
  }
  SECTION("a print before the first request") {
    adapter_process p(f.options(R"(echo 'Loading weights'; read line; echo '{"ok": true}')"));
    std::this_thread::sleep_for(200ms);
    const exchange_result r = p.exchange(kRequest, clock::now() + 5s);
    CHECK(r.status == exchange_status::violated);
    CHECK(r.problem.find("wrote to stdout between requests: 'Loading weights\\x0A'") != std::string::npos);
    CHECK(r.problem.find("must go to stderr") != std::string::npos);
  }
  SECTION("a line past the limit") {
    process_options o = f.options("read line; head -c 5000 /dev/zero | tr '\\0' x; read line");
    o.max_line_bytes = 1000;
    adapter_process p(o);
    const exchange_result r = p.exchange(kRequest, clock::now() + 5s);
    CHECK(r.status == exchange_status::violated);
    CHECK(r.problem.find("passed 1000 bytes without a newline") != std::string::npos);
  }
}

TEST_CASE("an interrupt ends the wait at once", "[external][process]") {
  adapter_fixture f;
  process_options o = f.options("read line; sleep 30");
  const auto start = clock::now();
  o.interrupted = [&] { return clock::now() - start > 200ms; };
  adapter_process p(o);
  const exchange_result r = p.exchange(kRequest, clock::now() + 20s);
  CHECK(r.status == exchange_status::interrupted);
  CHECK(clock::now() - start < 3s);
  CHECK_FALSE(p.running());
}

TEST_CASE("stderr is kept, shared across adapters, and its tail explains a failure", "[external][process]") {
  adapter_fixture f;
  process_options o = f.options(R"(read line; echo 'Traceback (most recent call last):' >&2; echo 'ValueError: bad' >&2; exit 1)");
  o.stderr_tail = std::make_shared<stream_tail>();
  o.stderr_tail->append("an earlier adapter's line\n");
  const std::uint64_t mark = o.stderr_tail->mark();
  adapter_process p(o);
  CHECK(p.stderr_mark() == mark);
  const exchange_result r = p.exchange(kRequest, clock::now() + 5s);
  CHECK(r.status == exchange_status::ended);
  CHECK(p.stderr_since(mark) == "Traceback (most recent call last):\nValueError: bad");
  CHECK(p.stderr_since(mark, 20) == "ValueError: bad");  // cut to whole lines
  CHECK(o.stderr_tail->since(mark, 2000) == "Traceback (most recent call last):\nValueError: bad");  // outlives it
  CHECK(p.stderr_since(p.stderr_mark()).empty());
}

TEST_CASE("an adapter flooding stderr is drained while it works, and held within a bound", "[external][process]") {
  adapter_fixture f;
  // 20 MB to stderr before the answer: with nobody draining the pipe it would block at 64 KiB.
  adapter_process p(f.options(R"(read line; head -c 20000000 /dev/zero | tr '\0' x >&2; printf '\ndone\n' >&2; echo '{"ok": true}'; read line)"));
  const auto mark = p.stderr_mark();
  const exchange_result r = p.exchange(kRequest, clock::now() + 20s);
  REQUIRE(r.status == exchange_status::answered);
  CHECK(p.stderr_mark() - mark == 20000006);
  CHECK(p.stderr_since(mark, 100) == "done");
  SECTION("and while it is stopped") {
    adapter_process q(f.options(R"(read line; echo '{"ok": true}'; while read line; do :; done; head -c 5000000 /dev/zero >&2; printf '\nbye\n' >&2)"));
    REQUIRE(q.exchange(kRequest, clock::now() + 5s).status == exchange_status::answered);
    const auto before = q.stderr_mark();
    CHECK(q.stop() == "stdin closed: exited with status 0");
    CHECK(q.stderr_mark() - before == 5000005);
    CHECK(q.stderr_since(before, 100) == "bye");
  }
}

TEST_CASE("an adapter that exits while a process it started holds its stdout is seen at once", "[external][process]") {
  adapter_fixture f;
  // The background sleep inherits stdout: no end of file comes while it lives.
  adapter_process p(f.options("read line; sleep 30 & echo $! > '" + f.log.string() + "'; kill -SEGV $$"));
  const auto start = clock::now();
  const exchange_result r = p.exchange(kRequest, clock::now() + 20s);
  CHECK(clock::now() - start < 3s);
  CHECK(r.status == exchange_status::ended);
  CAPTURE(r.problem);
  CHECK(r.problem.find("the adapter ended without answering (a process it started still holds its stdout)") != std::string::npos);
  CHECK(r.problem.find("killed by signal 11 (SIGSEGV") != std::string::npos);
  CHECK_FALSE(p.running());
  const pid_t sleeper = f.logged_pid();
  REQUIRE(sleeper > 0);
  wait_until_ended(sleeper);
  CHECK(ended(sleeper));  // its group was killed
  CHECK(p.take_notes().empty());  // it stayed in the group: nothing escaped to note
}

TEST_CASE("a process that left the adapter's group is found, killed and noted", "[external][process]") {
  adapter_fixture f;
  const child_subreaper subreaper;
  adapter_process bystander(f.options("while read line; do echo '{\"ok\": true}'; done"));
  std::vector<std::string> notes;
  // Started, and out of the group (setsid has run and exec'd sleep) before the adapter goes on.
  const std::string escape = "setsid sleep 30 < /dev/null > /dev/null 2>&1 & while [ \"$(cat /proc/$!/comm)\" != sleep ]; do :; "
                             "done; echo $! > '" + f.log.string() + "'; ";
  SECTION("when the adapter exits") {
    adapter_process p(f.options("read line; " + escape + "exit 1"));
    CHECK(p.exchange(kRequest, clock::now() + 5s).status == exchange_status::ended);
    notes = p.take_notes();
  }
  SECTION("when the adapter is stopped") {
    adapter_process p(f.options(escape + "while read line; do :; done"));
    for (int i = 0; i < 300 && f.logged_pid() == 0; ++i) std::this_thread::sleep_for(10ms);
    CHECK(p.stop() == "stdin closed: exited with status 0");
    notes = p.take_notes();
  }
  const pid_t escaped = f.logged_pid();
  REQUIRE(escaped > 0);
  wait_until_ended(escaped);
  CHECK(ended(escaped));
  REQUIRE(notes.size() == 1);
  CHECK(notes[0] == "the adapter left process " + std::to_string(escaped) +
                        " (sleep) running outside its process group; it was killed");
  // Another adapter still running is not a stray.
  CHECK(bystander.exchange(kRequest, clock::now() + 5s).status == exchange_status::answered);
}

TEST_CASE("an adapter inherits no other adapter's pipes", "[external][process]") {
  adapter_fixture f;
  const std::set<std::string> before = pipe_links();
  adapter_process first(f.options("while read line; do echo '{\"ok\": true}'; done"));
  std::set<std::string> first_pipes;
  for (const auto& link : pipe_links())
    if (!before.count(link)) first_pipes.insert(link);
  REQUIRE(first_pipes.size() == 3);
  adapter_process second(f.options("read line; ls -l /proc/self/fd | awk '{print $NF}' | tr '\\n' ' '; echo"));
  const exchange_result r = second.exchange(kRequest, clock::now() + 5s);
  REQUIRE(r.status == exchange_status::answered);
  CAPTURE(r.line);
  for (const auto& link : first_pipes) CHECK(r.line.find(link) == std::string::npos);
}

TEST_CASE("wait statuses in words", "[external][process]") {
  CHECK(describe_wait_status(0) == "exited with status 0");
  CHECK(describe_wait_status(139 << 8) ==
        "exited with status 139 (the shell's 128 + 11: its command was killed by signal 11 (SIGSEGV, Segmentation fault))");
  CHECK(describe_wait_status(SIGKILL) == "killed by signal 9 (SIGKILL, Killed)");
  CHECK(describe_wait_status(127 << 8) == "exited with status 127 (the shell's 'command not found')");
}
