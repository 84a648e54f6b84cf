#include "interrupt.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstring>
#include <stdexcept>
#include <string>

namespace mqa::io {
namespace {

enum : int { kFree = 0, kFilling = 1, kReady = 2 };

struct slot {
  std::atomic<int> state{kFree};
  char path[PATH_MAX];
};
static_assert(std::atomic<int>::is_always_lock_free, "the handler reads the slots' state");

std::array<slot, removed_on_interrupt::kMaxRegistered> g_slots;
pthread_t g_main_thread;
std::atomic<bool> g_installed{false};
constexpr std::array<int, 3> kSignals{SIGINT, SIGTERM, SIGHUP};
// How deep a registered folder is emptied: its files and those of the folders in it.
constexpr int kFolderDepth = 1;

sigset_t signal_set() {
  sigset_t set;
  ::sigemptyset(&set);
  for (const int s : kSignals) ::sigaddset(&set, s);
  return set;
}

// Linux gives the main thread the process id as its thread id.
bool on_main_thread() { return ::syscall(SYS_gettid) == ::getpid(); }

bool is_dot_or_dot_dot(const char* name) {
  return name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0'));
}

// Everything in the folder `fd` refers to, folders `depth` levels down included (a fixed depth:
// no allocation, a 4 KiB listing buffer per level on the stack). Never through a link.
void empty_folder(int fd, int depth) {
  alignas(dirent64) char buffer[4096];
  // POSIX leaves unspecified whether a listing sees entries removed while it runs: list again
  // until a pass removes nothing.
  for (int pass = 0; pass < 16; ++pass) {
    bool removed = false;
    ::lseek(fd, 0, SEEK_SET);
    for (ssize_t length; (length = ::getdents64(fd, buffer, sizeof buffer)) > 0;) {
      for (ssize_t at = 0; at < length;) {
        const auto* entry = reinterpret_cast<const dirent64*>(buffer + at);
        at += entry->d_reclen;
        if (is_dot_or_dot_dot(entry->d_name)) continue;
        if (::unlinkat(fd, entry->d_name, 0) == 0) {
          removed = true;
        } else if (errno == EISDIR && depth > 0) {
          const int inner = ::openat(fd, entry->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
          if (inner >= 0) {
            empty_folder(inner, depth - 1);
            ::close(inner);
          }
          removed |= ::unlinkat(fd, entry->d_name, AT_REMOVEDIR) == 0;
        }
      }
    }
    if (!removed) break;
  }
}

void empty_and_remove_folder(const char* path) {
  const int fd = ::open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd >= 0) {
    empty_folder(fd, kFolderDepth);
    ::close(fd);
  }
  ::rmdir(path);
}

void remove_path(const char* path) {
  if (::unlink(path) == 0 || errno == ENOENT) return;
  empty_and_remove_folder(path);  // unlink(2) refuses folders (EISDIR)
}

extern "C" void on_interrupt(int signal_number) {
  const int saved_errno = errno;
  if (!on_main_thread()) {
    ::pthread_kill(g_main_thread, signal_number);
    errno = saved_errno;
    return;
  }
  for (std::size_t i = g_slots.size(); i-- > 0;)
    if (g_slots[i].state.load(std::memory_order_acquire) == kReady) remove_path(g_slots[i].path);
  // End the way the signal would have ended us: default action, unblocked, raised again.
  struct sigaction default_action {};
  default_action.sa_handler = SIG_DFL;
  ::sigemptyset(&default_action.sa_mask);
  ::sigaction(signal_number, &default_action, nullptr);
  sigset_t only;
  ::sigemptyset(&only);
  ::sigaddset(&only, signal_number);
  ::pthread_sigmask(SIG_UNBLOCK, &only, nullptr);
  ::raise(signal_number);
  errno = saved_errno;
}

}  // namespace

void install_interrupt_cleanup() {
  if (g_installed.exchange(true)) return;
  g_main_thread = ::pthread_self();
  struct sigaction action {};
  action.sa_handler = on_interrupt;
  action.sa_mask = signal_set();  // one cleanup at a time
  action.sa_flags = SA_RESTART;
  for (const int s : kSignals) {
    struct sigaction previous {};
    if (::sigaction(s, nullptr, &previous) == 0 && previous.sa_handler == SIG_IGN) continue;
    ::sigaction(s, &action, nullptr);
  }
}

removed_on_interrupt::removed_on_interrupt(const std::filesystem::path& path) {
  // Absolute, so that the handler does not depend on the working folder.
  const std::string text = std::filesystem::absolute(path).lexically_normal().native();
  if (text.size() >= PATH_MAX) throw std::logic_error("removed_on_interrupt: path longer than PATH_MAX: " + text);
  for (slot_ = 0; slot_ < g_slots.size(); ++slot_) {
    int expected = kFree;
    if (g_slots[slot_].state.compare_exchange_strong(expected, kFilling, std::memory_order_acq_rel)) break;
  }
  if (slot_ == g_slots.size()) throw std::logic_error("removed_on_interrupt: every slot is taken");
  std::memcpy(g_slots[slot_].path, text.c_str(), text.size() + 1);
  g_slots[slot_].state.store(kReady, std::memory_order_release);
}

removed_on_interrupt::~removed_on_interrupt() { g_slots[slot_].state.store(kFree, std::memory_order_release); }

interrupts_held::interrupts_held() {
  const sigset_t held = signal_set();
  ::pthread_sigmask(SIG_BLOCK, &held, &previous_);
}

interrupts_held::~interrupts_held() { ::pthread_sigmask(SIG_SETMASK, &previous_, nullptr); }

}  // namespace mqa::io
