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

extern "C" void note_signal(int sig) { received = sig; }

}  // namespace

interrupt_guard::interrupt_guard() {
  received = 0;
  struct sigaction action {};
  action.sa_handler = note_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESETHAND;  // no SA_RESTART: a blocking call returns EINTR and the run looks at the flag
  for (std::size_t i = 0; i < kSignals.size(); ++i) sigaction(kSignals[i], &action, &previous[i]);
}

interrupt_guard::~interrupt_guard() {
  for (std::size_t i = 0; i < kSignals.size(); ++i) sigaction(kSignals[i], &previous[i], nullptr);
}

bool interrupt_guard::requested() { return received != 0; }

void interrupt_guard::reraise() {
  const int sig = received ? static_cast<int>(received) : SIGINT;
  std::signal(sig, SIG_DFL);
  sigset_t only;
  sigemptyset(&only);
  sigaddset(&only, sig);
  sigprocmask(SIG_UNBLOCK, &only, nullptr);
  ::raise(sig);
  ::_exit(128 + sig);
}

}  // namespace mqa::cli
