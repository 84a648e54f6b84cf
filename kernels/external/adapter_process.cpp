#include "adapter_process.hpp"

#include "protocol.hpp"
#include "strays.hpp"

#include <fcntl.h>
#include <fmt/core.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

extern char** environ;

namespace mqa::external {
namespace {

using namespace std::chrono_literals;

constexpr auto kPollStep = 100ms;        // how often a wait looks at options.interrupted and the adapter's exit
constexpr auto kReapAfterKill = 10s;     // SIGKILL cannot be caught; only a process stuck in the kernel takes longer
constexpr auto kLastLineGrace = 100ms;   // after the adapter's exit, for the rest of what it wrote to arrive
// stderr read in one go before a wait looks at its clock again; and at most this much after the
// adapter's end (a process it left may hold the pipe and write on).
constexpr std::size_t kStderrStep = 1 << 20;
constexpr std::size_t kStderrAfterEnd = 4 << 20;

[[noreturn]] void throw_errno(int error, const std::string& what) {
  throw std::system_error(error, std::generic_category(), what);
}

// A file descriptor owned during set-up: closed unless released.
class owned_fd {
 public:
  explicit owned_fd(int fd = -1) : fd_(fd) {}
  owned_fd(const owned_fd&) = delete;
  owned_fd& operator=(const owned_fd&) = delete;
  ~owned_fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

// SIGPIPE blocked in this thread while writing to a pipe whose reader may be gone: the write
// fails with EPIPE instead of killing mqacheck, and the SIGPIPE it raised is consumed here
// (unless one was pending before, which is not ours to take).
class sigpipe_blocked {
 public:
  sigpipe_blocked() {
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_, &old_);
    sigset_t pending;
    sigpending(&pending);
    was_pending_ = sigismember(&pending, SIGPIPE) == 1;
  }
  sigpipe_blocked(const sigpipe_blocked&) = delete;
  sigpipe_blocked& operator=(const sigpipe_blocked&) = delete;
  ~sigpipe_blocked() {
    sigset_t pending;
    sigpending(&pending);
    if (!was_pending_ && sigismember(&pending, SIGPIPE) == 1) {
      const timespec zero{0, 0};
      while (sigtimedwait(&pipe_, nullptr, &zero) < 0 && errno == EINTR) {
      }
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }

 private:
  sigset_t pipe_{}, old_{};
  bool was_pending_ = false;
};

std::string signal_name(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  const char* text = strsignal(sig);
  return fmt::format("signal {} ({}{}{})", sig, abbrev ? "SIG" : "", abbrev ? abbrev : "", text ? fmt::format(", {}", text) : "");
}

// Python block-buffers stdout on a pipe: without this an adapter that prints its answer and
// forgets to flush would never be heard. Set only where the user has not set it.
std::vector<std::string> adapter_environment() {
  std::vector<std::string> env;
  bool unbuffered = false;
  for (char** e = environ; e && *e; ++e) {
    env.emplace_back(*e);
    unbuffered |= env.back().starts_with("PYTHONUNBUFFERED=");
  }
  if (!unbuffered) env.emplace_back("PYTHONUNBUFFERED=1");
  return env;
}

void set_nonblocking(int fd) {
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) throw_errno(errno, "fcntl(O_NONBLOCK)");
}

}  // namespace

std::string describe_wait_status(int status) {
  if (WIFSIGNALED(status))
    return fmt::format("killed by {}{}", signal_name(WTERMSIG(status)), WCOREDUMP(status) ? ", core dumped" : "");
  if (!WIFEXITED(status)) return fmt::format("ended with wait status {:#x}", status);
  const int code = WEXITSTATUS(status);
  std::string s = fmt::format("exited with status {}", code);
  // /bin/sh reports a command it ran and lost to signal N as status 128 + N.
  if (code > 128 && code - 128 < NSIG && sigabbrev_np(code - 128))
    s += fmt::format(" (the shell's 128 + {}: its command was killed by {})", code - 128, signal_name(code - 128));
  else if (code == 127)
    s += " (the shell's 'command not found')";
  else if (code == 126)
    s += " (the shell's 'found but not executable')";
  return s;
}

adapter_process::adapter_process(process_options o) : options_(std::move(o)) {
  int in[2], out[2];
  if (::pipe2(in, O_CLOEXEC) != 0) throw_errno(errno, "pipe2");
  owned_fd in_read(in[0]), in_write(in[1]);
  if (::pipe2(out, O_CLOEXEC) != 0) throw_errno(errno, "pipe2");
  owned_fd out_read(out[0]), out_write(out[1]);
  int err[2];
  if (::pipe2(err, O_CLOEXEC) != 0) throw_errno(errno, "pipe2");
  owned_fd err_read(err[0]), err_write(err[1]);
  stderr_ = options_.stderr_tail ? options_.stderr_tail : std::make_shared<stream_tail>();

  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attributes;
  posix_spawn_file_actions_init(&actions);
  posix_spawnattr_init(&attributes);
  posix_spawn_file_actions_adddup2(&actions, in_read.get(), STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, out_write.get(), STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err_write.get(), STDERR_FILENO);
  // Its own process group (pgid = its pid): a timeout kills the group, and the terminal's Ctrl-C
  // reaches mqacheck alone, which then stops the adapter itself. Default signal dispositions and
  // an empty mask, whatever mqacheck's own are.
  sigset_t defaults, empty;
  sigemptyset(&defaults);
  for (const int sig : {SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD}) sigaddset(&defaults, sig);
  sigemptyset(&empty);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
  posix_spawnattr_setpgroup(&attributes, 0);
  posix_spawnattr_setsigdefault(&attributes, &defaults);
  posix_spawnattr_setsigmask(&attributes, &empty);

  std::vector<std::string> env = adapter_environment();
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::string shell = "sh", dash_c = "-c";
  char* argv[] = {shell.data(), dash_c.data(), options_.command.data(), nullptr};
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, "/bin/sh", &actions, &attributes, argv, envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  if (rc != 0) throw_errno(rc, "cannot start /bin/sh for the adapter");
  pid_ = pid;
  spare(pid_);
  to_adapter_ = in_write.release();
  from_adapter_ = out_read.release();
  from_stderr_ = err_read.release();
  set_nonblocking(to_adapter_);
  set_nonblocking(from_adapter_);
  set_nonblocking(from_stderr_);
}

adapter_process::~adapter_process() {
  stop();
  if (from_stderr_ >= 0) ::close(from_stderr_);
}

bool adapter_process::exited() const {
  if (pid_ <= 0) return true;
  siginfo_t info{};
  return ::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid_;
}

void adapter_process::drain_stderr(std::size_t max_bytes) {
  char buffer[65536];
  std::size_t read_now = 0;
  while (from_stderr_ >= 0 && read_now < max_bytes) {
    const ssize_t r = ::read(from_stderr_, buffer, sizeof buffer);
    if (r > 0) {
      stderr_->append({buffer, static_cast<std::size_t>(r)});
      read_now += static_cast<std::size_t>(r);
    } else if (r < 0 && errno == EINTR) {
      continue;
    } else {
      if (r == 0 || errno != EAGAIN) {  // end of file: nobody holds its write end any more
        ::close(from_stderr_);
        from_stderr_ = -1;
      }
      return;
    }
  }
}

bool adapter_process::wait_for(int fd, short events, std::chrono::milliseconds step) {
  pollfd p[2];
  nfds_t n = 0;
  if (fd >= 0) p[n++] = {fd, events, 0};
  if (from_stderr_ >= 0) p[n++] = {from_stderr_, POLLIN, 0};
  const int timeout = static_cast<int>(std::max<std::int64_t>(step.count(), 0));
  if (n == 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(timeout));
    return false;
  }
  // EINTR counts as not ready, so that the caller looks at its clock and its interrupt flag again.
  if (::poll(p, n, timeout) <= 0) return false;
  if (from_stderr_ >= 0 && p[n - 1].revents != 0) drain_stderr(kStderrStep);
  return fd >= 0 && p[0].revents != 0;
}

void adapter_process::after_end(pid_t group) {
  release(group);
  drain_stderr(kStderrAfterEnd);
  if (from_stderr_ >= 0) ::close(from_stderr_);
  from_stderr_ = -1;
  for (const stray& s : end_strays(group))
    if (s.escaped) notes_.push_back(describe(s));
}

void adapter_process::close_pipes() {
  for (int* fd : {&to_adapter_, &from_adapter_}) {
    if (*fd >= 0) ::close(*fd);
    *fd = -1;
  }
  pending_.clear();
}

std::string adapter_process::kill() {
  if (pid_ <= 0) return "";
  const pid_t group = pid_;
  ::kill(-pid_, SIGKILL);
  exited_cleanly_ = false;
  close_pipes();
  int status = 0;
  const auto until = clock::now() + kReapAfterKill;
  for (;;) {
    const pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_) break;
    if (r < 0 && errno != EINTR) {
      const int error = errno;
      pid_ = -1;
      after_end(group);
      return fmt::format("its exit status could not be read ({})", std::strerror(error));
    }
    if (clock::now() > until) {
      pid_ = -1;
      after_end(group);
      return fmt::format("did not end within {} s of SIGKILL (pid {} left behind)", kReapAfterKill.count(), group);
    }
    std::this_thread::sleep_for(5ms);
  }
  pid_ = -1;
  after_end(group);
  return describe_wait_status(status);
}

std::string adapter_process::wait_for_end(std::string_view what_happened) {
  if (to_adapter_ >= 0) ::close(to_adapter_);
  to_adapter_ = -1;
  const auto until = clock::now() + options_.exit_grace;
  for (;;) {
    // Seen ended but not yet reaped: until it is, its pid (its group's id) cannot be reused, so
    // the group kill below reaches only what the adapter started and left running.
    siginfo_t info{};
    const int r = ::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT);
    if (r == 0 && info.si_pid == pid_) {
      const pid_t group = pid_;
      ::kill(-pid_, SIGKILL);
      int status = 0;
      while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
      }
      exited_cleanly_ = WIFEXITED(status) && WEXITSTATUS(status) == 0;
      pid_ = -1;
      close_pipes();
      after_end(group);
      return fmt::format("{}: {}", what_happened, describe_wait_status(status));
    }
    if (r < 0 && errno != EINTR) break;
    if (clock::now() > until) break;
    // Discard what it still writes to stdout and keep its stderr, so that a full pipe cannot
    // keep it from exiting.
    if (wait_for(from_adapter_, POLLIN, 10ms)) {
      char sink[4096];
      const ssize_t n = ::read(from_adapter_, sink, sizeof sink);
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
        ::close(from_adapter_);
        from_adapter_ = -1;
      }
    }
  }
  const std::string how = kill();
  return fmt::format("{}, and it did not exit within {} ms: its process group was killed ({})", what_happened,
                     options_.exit_grace.count(), how);
}

std::string adapter_process::stop() {
  if (pid_ <= 0) return "";
  return wait_for_end("stdin closed");
}

exchange_result adapter_process::exchange(std::string_view request, clock::time_point deadline) {
  if (pid_ <= 0) return {exchange_status::gone, "", "the adapter is not running"};
  auto give_up = [&](exchange_status s, std::string problem) {
    const std::string how = kill();
    return exchange_result{s, "", problem.empty() ? how : fmt::format("{} ({})", problem, how)};
  };
  auto interrupted = [&] { return options_.interrupted && options_.interrupted(); };
  drain_stderr(kStderrStep);

  // Anything on stdout before the request is a line meant for nobody: the stream is out of step.
  for (;;) {
    char buffer[4096];
    const ssize_t r = ::read(from_adapter_, buffer, sizeof buffer);
    if (r > 0) {
      pending_.append(buffer, static_cast<std::size_t>(r));
      if (pending_.size() > options_.max_line_bytes) break;
      continue;
    }
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) return {exchange_status::gone, "", wait_for_end("the adapter closed its stdout before the request")};
    break;  // EAGAIN: nothing waiting
  }
  if (!pending_.empty())
    return give_up(exchange_status::violated,
                   fmt::format("the adapter wrote to stdout between requests: {}; stdout is reserved for protocol "
                               "lines, the adapter's own messages must go to stderr",
                               quote(pending_)));
  // Ended, while something it started holds its stdout open (else the read above saw the end).
  if (exited()) return {exchange_status::gone, "", wait_for_end("the adapter had ended before the request")};

  std::size_t sent = 0;
  while (sent < request.size()) {
    if (interrupted()) return give_up(exchange_status::interrupted, "interrupted");
    ssize_t w;
    int error;
    {
      sigpipe_blocked guard;
      w = ::write(to_adapter_, request.data() + sent, request.size() - sent);
      error = errno;
    }
    if (w > 0) {
      sent += static_cast<std::size_t>(w);
      continue;
    }
    if (error == EINTR) continue;
    if (error == EPIPE)
      return {sent ? exchange_status::ended : exchange_status::gone, "",
              wait_for_end("the adapter closed its stdin before reading the request")};
    if (error != EAGAIN) return give_up(exchange_status::ended, fmt::format("cannot write to the adapter's stdin ({})", std::strerror(error)));
    const auto now = clock::now();
    if (now >= deadline) return give_up(exchange_status::timed_out, "");
    if (exited())
      return {sent ? exchange_status::ended : exchange_status::gone, "",
              wait_for_end("the adapter ended before reading the request")};
    wait_for(to_adapter_, POLLOUT, std::min(kPollStep, std::chrono::ceil<std::chrono::milliseconds>(deadline - now)));
  }

  std::optional<clock::time_point> last_line_until;  // set once the adapter is seen exited
  for (;;) {
    if (const auto newline = pending_.find('\n'); newline != std::string::npos) {
      std::string line = pending_.substr(0, newline);
      const std::string rest = pending_.substr(newline + 1);
      pending_.clear();
      if (!rest.empty())
        return give_up(exchange_status::violated,
                       fmt::format("the adapter answered more than one line: after {} came {}; stdout is reserved for "
                                   "protocol lines, the adapter's own messages must go to stderr",
                                   quote(line), quote(rest)));
      if (!line.empty() && line.back() == '\r') line.pop_back();
      return {exchange_status::answered, std::move(line), ""};
    }
    if (pending_.size() > options_.max_line_bytes)
      return give_up(exchange_status::violated,
                     fmt::format("the adapter's answer passed {} bytes without a newline: {}", options_.max_line_bytes,
                                 quote(pending_)));
    if (interrupted()) return give_up(exchange_status::interrupted, "interrupted");
    const auto now = clock::now();
    if (now >= deadline) return give_up(exchange_status::timed_out, "");
    // The adapter is gone but its stdout is not closed: a process it started (in the background,
    // inheriting stdout) holds it. No end of file will come; what it wrote before exiting will,
    // and a last whole line is still its answer.
    if (!last_line_until && exited()) last_line_until = now + kLastLineGrace;
    if (last_line_until && now >= *last_line_until) {
      const std::string what =
          pending_.empty() ? std::string("the adapter ended without answering (a process it started still holds its stdout)")
                           : fmt::format("the adapter ended in the middle of a line: {}", quote(pending_));
      return {exchange_status::ended, "", wait_for_end(what)};
    }
    const auto step = last_line_until ? std::chrono::ceil<std::chrono::milliseconds>(*last_line_until - now) : kPollStep;
    if (!wait_for(from_adapter_, POLLIN, std::min(step, std::chrono::ceil<std::chrono::milliseconds>(deadline - now))))
      continue;
    char buffer[65536];
    const ssize_t r = ::read(from_adapter_, buffer, sizeof buffer);
    if (r > 0) {
      pending_.append(buffer, static_cast<std::size_t>(r));
    } else if (r == 0) {
      const std::string what = pending_.empty()
                                   ? std::string("the adapter closed its stdout without answering")
                                   : fmt::format("the adapter closed its stdout in the middle of a line: {}", quote(pending_));
      return {exchange_status::ended, "", wait_for_end(what)};
    } else if (errno != EAGAIN && errno != EINTR) {
      return give_up(exchange_status::ended, fmt::format("cannot read the adapter's stdout ({})", std::strerror(errno)));
    }
  }
}

}  // namespace mqa::external
