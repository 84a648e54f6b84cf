#include "interrupt_guard.hpp"

#include <signal.h>
#include <unistd.h>

#include <array>
#include <csignal>

namespace mqa::cli {
namespace {

constexpr std::array kSignals{SIGINT, SIGTERM, SIGHUP};
volatile std::sig_atomic_t received = 0;
std::array<struct sigaction, kSignals.size()> previous{};

// The handlers from before the guard back (io::install_interrupt_cleanup's: they remove every
// path registered for removal, such as run --out's staging folder, then end the process by the
// signal). sigaction(2) is async-signal-safe, and `previous` is written before any guard handler
// is installed.
void restore_previous() {
  for (std::size_t i = 0; i < kSignals.size(); ++i) sigaction(kSignals[i], &previous[i], nullptr);
}

// The first signal is noted; a second one meets the previous handlers and acts at once.
extern "C" void note_signal(int sig) {
  received = sig;
  restore_previous();
}

}  // namespace

interrupt_guard::interrupt_guard() {
  received = 0;
  struct sigaction action {};
  action.sa_handler = note_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = 0;  // no SA_RESTART: a blocking call returns EINTR and the run looks at the flag
  for (std::size_t i = 0; i < kSignals.size(); ++i) sigaction(kSignals[i], &action, &previous[i]);
}

interrupt_guard::~interrupt_guard() { restore_previous(); }

bool interrupt_guard::requested() { return received != 0; }

void interrupt_guard::reraise() {
  const int sig = received ? static_cast<int>(received) : SIGINT;
  restore_previous();
  // A signal ignored before the guard (nohup's SIGHUP) was still noted and ended the run: it ends
  // the process too.
  struct sigaction now {};
  if (sigaction(sig, nullptr, &now) == 0 && now.sa_handler == SIG_IGN) std::signal(sig, SIG_DFL);
  sigset_t only;
  sigemptyset(&only);
  sigaddset(&only, sig);
  sigprocmask(SIG_UNBLOCK, &only, nullptr);
  ::raise(sig);
  ::_exit(128 + sig);
}

}  // namespace mqa::cli
