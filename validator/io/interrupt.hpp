// What an interrupted mqacheck leaves behind: nothing. SIGINT and SIGTERM
// remove every registered temporary file and staging folder, then end the process with the same
// signal, so the caller's shell still sees "killed by SIGINT" (status 130 / -2).
//
// Why removal happens inside the handler rather than at a flag the work checks: the long stretches
// (inputs, the exact reference, OpenBLAS) run in code that never looks at a flag, and a Ctrl-C
// must not wait minutes. The handler therefore does only async-signal-safe work over a fixed
// table of C strings: unlink(2) a file; for a folder, unlink every entry (getdents64(2), and the
// entries of the folders in it: staging folders hold files, an adapter's scratch folder a folder
// per case; never through a link) and rmdir(2) it. Registration never allocates in the
// handler's view: a slot is filled first and published with one atomic store.
//
// Threads: a signal sent to the process may land on any thread (ours or OpenBLAS's). A handler
// that runs off the main thread forwards the signal to the main thread and returns, so the
// cleanup always runs on the thread that creates and renames files: it cannot race a file being
// created. `interrupts_held` blocks the signals on the main thread for the few renames that must
// happen together; a signal sent meanwhile waits and is acted on right after.
//
// Linux-only (getdents64, gettid), as the rest of mqacheck's builds.
#pragma once

#include <boost/core/noncopyable.hpp>

#include <csignal>
#include <cstddef>
#include <filesystem>

namespace mqa::io {

// Installs the handlers for SIGINT, SIGTERM and SIGHUP; a signal the parent set to be ignored
// (`nohup`, a background job of a script) stays ignored. Call it once from the main thread
// before any other thread starts; later calls do nothing.
void install_interrupt_cleanup();

// While alive, `path` (a file, or a folder of files) is removed if the process is interrupted.
// Register before creating the path and keep the guard until the path has been renamed away or
// removed. At most kMaxRegistered paths at once; more is a logic_error.
class removed_on_interrupt {
 public:
  static constexpr std::size_t kMaxRegistered = 64;
  explicit removed_on_interrupt(const std::filesystem::path& path);
  ~removed_on_interrupt();
  removed_on_interrupt(const removed_on_interrupt&) = delete;
  removed_on_interrupt& operator=(const removed_on_interrupt&) = delete;

 private:
  std::size_t slot_;
};

// While alive, SIGINT, SIGTERM and SIGHUP wait (blocked on this thread; forwarded here from any
// other). Keep such a scope to a few system calls.
class interrupts_held : boost::noncopyable {
 public:
  interrupts_held();
  ~interrupts_held();

 private:
  sigset_t previous_;
};

}  // namespace mqa::io
