// mqacheck._core.SuiteRun: a suite against a kernel that runs in this Python process
// (api/suite_run.hpp); python/mqacheck/suite_run.py is its one caller.
#pragma once

#include <pybind11/pybind11.h>

namespace mqa::python {

void bind_suite_run(pybind11::module_& m);

}  // namespace mqa::python
