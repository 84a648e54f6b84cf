// Ctrl-C during `run --kernel` (or `run --devices`): SIGINT, SIGTERM and SIGHUP are noted instead
// of obeyed while a guard lives, so that the run stops its adapter (or its workers) and removes its
// scratch folder on the way out;
// a second signal acts at once (the first one puts the previous handlers back). reraise() then
// ends mqacheck by the signal it got, as the shell that started it expects, through the handlers
// from before the guard (io/interrupt.hpp): what is registered for removal on interrupt (run
// --out's staging folder) goes first.
#pragma once

namespace mqa::cli {

class interrupt_guard {
 public:
  interrupt_guard();
  ~interrupt_guard();  // the previous handlers back
  interrupt_guard(const interrupt_guard&) = delete;
  interrupt_guard& operator=(const interrupt_guard&) = delete;

  static bool requested();  // a signal arrived (async-signal-safe flag)
  [[noreturn]] static void reraise();
};

}  // namespace mqa::cli
