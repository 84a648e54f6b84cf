// One adapter process: `/bin/sh -c COMMAND`, its stdin, stdout and stderr pipes to mqacheck, in a
// process group of its own so that stopping it stops whatever it started (a Python interpreter,
// its compiler workers).
//
// Invariants the caller can rely on:
// - Nothing here can kill mqacheck: SIGPIPE from a dead adapter is blocked and consumed, and the
//   adapter's death is an outcome, not an exception.
// - After any exchange that did not end in an answer, the process is gone: its group was sent
//   SIGKILL where it had not exited, and it was reaped (no zombie). The caller starts a new one.
// - The parent's end of every pipe is close-on-exec, so no adapter inherits another's pipes, and
//   destroying the object closes them and reaps the process.
// - stderr is drained whenever mqacheck waits on the adapter (for its answer, for its exit), into
//   a bounded stream_tail: an adapter that writes without pause neither blocks nor fills a disk.
// - An adapter that exits while mqacheck waits for its answer ends the exchange within a poll
//   step, even when a process it started still holds its stdout open.
// - When it ends, its group is killed and, where mqacheck is a child_subreaper (strays.hpp), what
//   it left running outside its group is killed too and noted (take_notes).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "stream_tail.hpp"

namespace mqa::external {

using clock = std::chrono::steady_clock;

struct process_options {
  std::string command;  // run by /bin/sh -c
  // Where the adapter's stderr is kept; shared, so that it outlives the process and the caller
  // can explain a case the process failed after it is gone. Null: a stream_tail of its own.
  std::shared_ptr<stream_tail> stderr_tail;
  // Polled while waiting (at least every 100 ms); true stops the adapter and ends the exchange
  // with exchange_status::interrupted.
  std::function<bool()> interrupted;
  std::size_t max_line_bytes = 1 << 20;  // a longer response line is a protocol violation
  // How long an adapter whose stdin was closed may take to exit before its group is killed.
  std::chrono::milliseconds exit_grace{5000};
};

enum class exchange_status {
  answered,     // one line came back; `line` holds it
  gone,         // the adapter had ended (or closed its pipes) before any of the request was written
  timed_out,    // no line before the deadline: killed
  ended,        // the adapter exited, or closed its stdout or stdin, without answering
  violated,     // it wrote more than one line, a line past max_line_bytes, or output between requests
  interrupted,  // options.interrupted() said so: killed
};

struct exchange_result {
  exchange_status status = exchange_status::answered;
  std::string line;     // answered: the response, without its newline
  std::string problem;  // otherwise: one sentence ("exited with status 3", "killed by signal 11 (SIGSEGV)")
};

class adapter_process {
 public:
  // Starts the process. Throws std::system_error when the pipes or the spawn fail
  // (the command itself failing, e.g. "not found", shows as the shell exiting with 127).
  explicit adapter_process(process_options o);
  ~adapter_process();
  adapter_process(const adapter_process&) = delete;
  adapter_process& operator=(const adapter_process&) = delete;

  // Sends `request` (one line, newline included) and reads one line back, both before `deadline`.
  exchange_result exchange(std::string_view request, clock::time_point deadline);

  // Closes the adapter's stdin (its signal to exit), waits up to exit_grace, then kills its group;
  // reaps it. Returns how it ended ("stdin closed: exited with status 0"). Idempotent.
  std::string stop();
  // Kills its group at once (an adapter whose stream is out of step) and reaps it. Idempotent.
  std::string kill();

  // The adapter's stderr: a mark taken before a case, then what it wrote since, at most max_bytes
  // (stream_tail::since: whole lines, valid UTF-8).
  std::uint64_t stderr_mark() const { return stderr_->mark(); }
  std::string stderr_since(std::uint64_t mark, std::size_t max_bytes = 2000) const { return stderr_->since(mark, max_bytes); }

  // One sentence per process the adapter left running outside its process group, killed when
  // it ended; each is handed out once.
  std::vector<std::string> take_notes() { return std::exchange(notes_, {}); }

  bool running() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }
  // The last end was an exit with status 0.
  bool exited_cleanly() const { return exited_cleanly_; }

 private:
  // After EOF on stdout or EPIPE on stdin: the exit status if it comes within exit_grace, else killed.
  std::string wait_for_end(std::string_view what_happened);
  // The adapter itself has exited (not yet reaped, so its group id stays its own).
  bool exited() const;
  // Waits at most `step` for `fd` (-1: none) to be ready for `events`, draining stderr meanwhile;
  // false when `fd` is not ready.
  bool wait_for(int fd, short events, std::chrono::milliseconds step);
  void drain_stderr(std::size_t max_bytes);
  // After the adapter was reaped: the rest of its stderr, and what it left outside its group.
  void after_end(pid_t group);
  void close_pipes();

  process_options options_;
  pid_t pid_ = -1;
  int to_adapter_ = -1;    // its stdin
  int from_adapter_ = -1;  // its stdout
  int from_stderr_ = -1;   // its stderr
  std::shared_ptr<stream_tail> stderr_;
  std::string pending_;    // bytes read past the last response line
  std::vector<std::string> notes_;
  bool exited_cleanly_ = false;
};

// "exited with status 3", "killed by signal 11 (SIGSEGV)"; a shell's 128 + N is explained.
std::string describe_wait_status(int status);

}  // namespace mqa::external
