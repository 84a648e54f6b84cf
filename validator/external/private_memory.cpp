#include "private_memory.hpp"

#include <sys/prctl.h>

namespace mqa::external {

private_memory::private_memory() {
  const int now = ::prctl(PR_GET_DUMPABLE, 0, 0, 0, 0);
  if (now >= 0) previous_ = now;
  engaged_ = ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == 0;
}

private_memory::~private_memory() {
  if (engaged_) ::prctl(PR_SET_DUMPABLE, previous_, 0, 0, 0);
}

}  // namespace mqa::external
