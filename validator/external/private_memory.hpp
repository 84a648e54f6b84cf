// While an adapter runs, mqacheck's memory and open files are closed to it.
//
// The adapter runs as the same user, and by default a process may read another of its user's
// memory (/proc/<pid>/mem), list its open files (/proc/<pid>/fd) and attach a debugger to it:
// a kernel under test could read the exact reference out of the judge. A process that is not
// dumpable (prctl PR_SET_DUMPABLE 0) has those files owned by root and refuses ptrace to anyone
// without CAP_SYS_PTRACE. What stays possible is for a privileged adapter (root, CAP_SYS_PTRACE),
// which is outside what mqacheck defends against (docs/protocol.md, "What a kernel can see").
// A side effect: no core dump while the guard is alive.
#pragma once

#include <boost/core/noncopyable.hpp>

namespace mqa::external {

class private_memory : boost::noncopyable {
 public:
  private_memory();   // marks the process not dumpable
  ~private_memory();  // restores what it was
  // Whether the process is now not dumpable (false where the system refused).
  bool engaged() const { return engaged_; }

 private:
  int previous_ = 1;
  bool engaged_ = false;
};

}  // namespace mqa::external
