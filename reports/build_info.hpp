// Which mqacheck made a report: the project version (CMake's project(VERSION)) and the git commit
// the build was made from ("unknown" outside a git checkout; "-dirty" when tracked files differed
// from it). Certificates and reports carry both so that a result can be traced to its code.
#pragma once

#include <string_view>

namespace mqa::reports {

struct build_info {
  std::string_view version;
  std::string_view commit;
};

build_info this_build();

}  // namespace mqa::reports
