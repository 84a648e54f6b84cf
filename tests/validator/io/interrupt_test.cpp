// The interrupt cleanup, in child processes: each child installs the handlers, registers paths and
// is then signalled; the parent checks how the child ended and what is left on disk.
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <functional>
#include <thread>

#include "support/scratch_dir.hpp"
#include "validator/io/interrupt.hpp"

namespace fs = std::filesystem;
namespace io = mqa::io;
using mqa::test::scratch_dir;
using mqa::test::write_text;

namespace {

// Runs `body` in a child process; returns its wait status. The child never returns into Catch.
int in_child(const std::function<void()>& body) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    // As a shell starts a foreground command, whatever this test process inherited.
    for (const int s : {SIGINT, SIGTERM, SIGHUP}) std::signal(s, SIG_DFL);
    sigset_t none;
    ::sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    body();
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return status;
}

bool killed_by(int status, int signal_number) { return WIFSIGNALED(status) && WTERMSIG(status) == signal_number; }

// A staging folder as the writers leave it mid-way: files, one of them a hidden temporary.
void fill_staging(const fs::path& staging) {
  fs::create_directory(staging);
  for (const char* name : {"case.toml", "q.npy", ".k.npy.123-4.partial"}) write_text(staging / name, "x");
}

}  // namespace

TEST_CASE("SIGINT and SIGTERM remove registered files and folders, then end the process by the signal", "[io][interrupt]") {
  const int signal_number = GENERATE(SIGINT, SIGTERM, SIGHUP);
  CAPTURE(signal_number);
  scratch_dir dir("interrupt");
  const int status = in_child([&] {
    io::install_interrupt_cleanup();
    const io::removed_on_interrupt file(dir.root / ".out.json.1-0.partial");
    write_text(dir.root / ".out.json.1-0.partial", "half");
    const io::removed_on_interrupt folder(dir.root / ".bundle.partial-1-0");
    fill_staging(dir.root / ".bundle.partial-1-0");
    write_text(dir.root / "kept.json", "not registered");
    {
      const io::removed_on_interrupt forgotten(dir.root / "renamed.json");  // registered, then released
    }
    write_text(dir.root / "renamed.json", "in place");
    ::raise(signal_number);
    ::_exit(0);  // not reached
  });
  CHECK(killed_by(status, signal_number));
  CHECK(dir.entries() == std::vector<std::string>{"kept.json", "renamed.json"});
}

TEST_CASE("a signal that lands on another thread is handled on the main thread", "[io][interrupt]") {
  scratch_dir dir("interrupt-thread");
  const int status = in_child([&] {
    io::install_interrupt_cleanup();
    const io::removed_on_interrupt folder(dir.root / ".bundle.partial-2-0");
    fill_staging(dir.root / ".bundle.partial-2-0");
    std::thread worker([] { ::pthread_kill(::pthread_self(), SIGTERM); });  // delivered to the worker
    worker.join();
    for (int i = 0; i < 500; ++i) ::usleep(10'000);  // the main thread gets the forwarded signal
    ::_exit(0);
  });
  CHECK(killed_by(status, SIGTERM));
  CHECK(dir.entries().empty());
}

TEST_CASE("held interrupts wait until the steps that belong together are done", "[io][interrupt]") {
  scratch_dir dir("interrupt-held");
  const int status = in_child([&] {
    io::install_interrupt_cleanup();
    const io::removed_on_interrupt temporary(dir.root / ".temporary");
    write_text(dir.root / ".temporary", "x");
    {
      const io::interrupts_held held;
      ::raise(SIGINT);
      write_text(dir.root / "done-while-held", "x");  // the process is still alive here
    }
    ::_exit(0);  // not reached: the held signal acts when the scope ends
  });
  CHECK(killed_by(status, SIGINT));
  CHECK(dir.entries() == std::vector<std::string>{"done-while-held"});
}

TEST_CASE("a signal the parent ignores stays ignored", "[io][interrupt]") {
  scratch_dir dir("interrupt-ignored");
  const int status = in_child([&] {
    std::signal(SIGINT, SIG_IGN);  // as `nohup` or a script's background job leaves it
    io::install_interrupt_cleanup();
    const io::removed_on_interrupt file(dir.root / "file");
    write_text(dir.root / "file", "x");
    ::raise(SIGINT);
    ::_exit(7);
  });
  CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 7));
  CHECK(dir.entries() == std::vector<std::string>{"file"});
}
