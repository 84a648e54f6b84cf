// The machine a certificate was made on: the system from uname(2), the CPU model from
// /proc/cpuinfo ("unknown" where there is none), the cores, the GPU the GPU variants use.
#pragma once

#include <string>

#include "reports/certificate.hpp"

namespace mqa::cli {

reports::machine this_machine();

// Now, UTC, ISO 8601 ("2026-11-30T21:34:51Z").
std::string utc_now();

}  // namespace mqa::cli
