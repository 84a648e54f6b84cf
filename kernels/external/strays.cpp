#include "strays.hpp"

#include <fcntl.h>
#include <fmt/core.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <set>
#include <thread>

#include "text.hpp"

namespace mqa::external {
namespace {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

std::mutex spared_mutex;
std::set<pid_t>& spared() {
  static std::set<pid_t> pids;
  return pids;
}

bool is_spared(pid_t pid) {
  const std::lock_guard lock(spared_mutex);
  return spared().count(pid) > 0;
}

struct process_entry {
  pid_t pid = 0;
  std::string name;
  char state = '?';
  pid_t parent = 0, group = 0;
};

// /proc/<pid>/stat is "pid (comm) state ppid pgrp ...", where comm may hold spaces and ')': it
// ends at the last ')'. Read with read(2): a process that ends meanwhile makes the read fail
// (ESRCH), which libstdc++'s filebuf would throw through an istreambuf_iterator.
bool read_entry(pid_t pid, process_entry& e) {
  const int fd = ::open(("/proc/" + std::to_string(pid) + "/stat").c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buffer[1024];
  const ssize_t length = ::read(fd, buffer, sizeof buffer - 1);
  ::close(fd);
  if (length <= 0) return false;
  const std::string stat(buffer, static_cast<std::size_t>(length));
  const auto open = stat.find('('), close = stat.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open) return false;
  e.pid = pid;
  e.name = valid_utf8(std::string_view(stat).substr(open + 1, close - open - 1));
  long parent = 0, group = 0;
  char state = '?';
  if (std::sscanf(stat.c_str() + close + 1, " %c %ld %ld", &state, &parent, &group) != 3) return false;
  e.state = state;
  e.parent = static_cast<pid_t>(parent);
  e.group = static_cast<pid_t>(group);
  return true;
}

struct scan_result {
  std::vector<process_entry> children;  // this process's
  bool group_running = false;           // a member of the group scanned for has not ended yet
};

// Zombies do not count as running: one whose parent never reaps it (init in some containers)
// must not keep the scan waiting.
scan_result scan(pid_t group) {
  scan_result r;
  const pid_t self = ::getpid();
  std::error_code ec;
  for (std::filesystem::directory_iterator it("/proc", ec), last; !ec && it != last; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    pid_t pid = 0;
    const auto [end, error] = std::from_chars(name.data(), name.data() + name.size(), pid);
    if (error != std::errc() || end != name.data() + name.size()) continue;
    process_entry e;
    if (!read_entry(pid, e)) continue;
    const bool ended = e.state == 'Z' || e.state == 'X';
    if (group > 0 && e.group == group && !ended) r.group_running = true;
    if (e.parent == self) r.children.push_back(std::move(e));
  }
  return r;
}

bool reap(pid_t pid, steady::duration patience) {
  const auto until = steady::now() + patience;
  for (;;) {
    int status = 0;
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid || (r < 0 && errno == ECHILD)) return true;
    if (steady::now() > until) return false;
    std::this_thread::sleep_for(2ms);
  }
}

}  // namespace

child_subreaper::child_subreaper() {
  if (::prctl(PR_GET_CHILD_SUBREAPER, &previous_) == 0 && ::prctl(PR_SET_CHILD_SUBREAPER, 1) == 0) set_ = true;
}

child_subreaper::~child_subreaper() {
  if (set_) ::prctl(PR_SET_CHILD_SUBREAPER, previous_);
}

void spare(pid_t pid) {
  const std::lock_guard lock(spared_mutex);
  spared().insert(pid);
}

void release(pid_t pid) {
  const std::lock_guard lock(spared_mutex);
  spared().erase(pid);
}

std::vector<stray> end_strays(pid_t group, std::chrono::milliseconds patience) {
  std::vector<stray> found;
  std::set<pid_t> tried;  // one that SIGKILL did not end is not tried twice
  const auto until = steady::now() + patience;
  for (;;) {
    auto [children, group_running] = scan(group);
    std::erase_if(children, [&](const process_entry& e) { return is_spared(e.pid) || tried.count(e.pid) > 0; });
    if (children.empty() && !group_running) break;
    if (steady::now() > until) break;
    for (const auto& c : children) {
      tried.insert(c.pid);
      ::kill(c.pid, SIGKILL);
      const bool ended = c.state == 'Z' || c.state == 'X';
      found.push_back({c.pid, c.name, !ended && c.group != group, reap(c.pid, 1s)});
    }
    if (children.empty()) std::this_thread::sleep_for(5ms);  // the group's members are still dying
  }
  return found;
}

std::string describe(const stray& s) {
  return fmt::format("the adapter left process {} ({}) running outside its process group; {}", s.pid, s.name,
                     s.reaped ? "it was killed" : "it did not end within 1 s of SIGKILL");
}

}  // namespace mqa::external
