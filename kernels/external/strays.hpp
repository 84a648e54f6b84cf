// Processes an adapter leaves behind outside its process group (Linux).
//
// Stopping an adapter kills its process group, but a descendant that called setsid() or
// setpgid() has left the group and would outlive the run unseen. While a child_subreaper lives,
// such a descendant is reparented to mqacheck when its parent dies (instead of to init), so it is
// found among mqacheck's own children, and ended.
//
// Contract: end_strays touches only this process's own children, and never one registered with
// spare() (the adapters still running). Nothing here throws or can kill mqacheck.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

namespace mqa::external {

// This process is a child subreaper (prctl PR_SET_CHILD_SUBREAPER) for the object's lifetime;
// the setting it found is restored at the end. Where the kernel refuses, nothing changes and no
// orphan is found later.
class child_subreaper {
 public:
  child_subreaper();
  ~child_subreaper();
  child_subreaper(const child_subreaper&) = delete;
  child_subreaper& operator=(const child_subreaper&) = delete;

 private:
  int previous_ = 0;
  bool set_ = false;
};

// Children that end_strays must leave alone: an adapter is spared from its start until it is reaped.
void spare(pid_t pid);
void release(pid_t pid);

struct stray {
  pid_t pid = 0;
  std::string name;      // its command name (from /proc), valid UTF-8
  bool escaped = false;  // it was running outside the group: worth a note (a member of the group, or a
                         // process already ended, is only reaped)
  bool reaped = false;   // false: it did not end within a second of SIGKILL
};

// Kills (SIGKILL) and reaps every child of this process not spared, scanning again until a scan
// finds none and `group` (an adapter's process group, already killed; 0 for none) has no member
// left: its members' orphans reach mqacheck only once those members are gone. Gives up after
// `patience`.
std::vector<stray> end_strays(pid_t group, std::chrono::milliseconds patience = std::chrono::milliseconds(2000));

// "the adapter left process 1234 (sleep) running outside its process group; it was killed"
std::string describe(const stray& s);

}  // namespace mqa::external
