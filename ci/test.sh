#!/usr/bin/env bash
# Every test: install, build (Release) and run all tests including the exhaustive tier, then
# rebuild with AddressSanitizer + UndefinedBehaviorSanitizer and run the tests again (the
# exhaustive tier excepted: it is the same code, 2^32 times; so are merge's and certify's repeated
# quick-suite runs), then compile the HIP kernels for AMD gfx942 with Debian's clang-19 so the AMD
# path cannot rot unseen. Where nvcc is installed the
# Release build also compiles the same kernels for NVIDIA (MQA_GPU=AUTO); no GPU is needed.
set -euo pipefail
cd "$(dirname "$0")/.."
# Each phase's wall time is printed as it ends: CI's budget is 25 minutes on 2 cores.
phase_start=$SECONDS
phase() { echo "ci/test.sh: $1 took $((SECONDS - phase_start)) s"; phase_start=$SECONDS; }

ci/install-deps.sh
phase "install"
jobs=$(nproc)

ci/build.sh build -DCMAKE_BUILD_TYPE=Release
phase "Release build"
ctest --test-dir build --output-on-failure -j "$jobs"
phase "Release tests"

# -O1, as AddressSanitizer's documentation advises: at -O0 the exact reference and the arithmetic
# models run ten times slower and the sanitizer tier alone would pass CI's time limit; asserts stay
# on (Debug), and -fno-omit-frame-pointer keeps the reports' stacks whole. -g1 gives the reports'
# stacks their functions, files and lines, without the variables' and types' debug information
# that full -g spends compile time on and no report uses.
# The GPU kernels are host-sanitizer-blind and already built once: MQA_GPU=OFF here.
ci/build.sh build-asan -DCMAKE_BUILD_TYPE=Debug "-DCMAKE_CXX_FLAGS_DEBUG=-O1 -g1" -DMQA_SANITIZE=ON -DMQA_GPU=OFF
phase "sanitizer build"
# The label quick-suite-repeated (tests/CMakeLists.txt) skips the two scripts that re-run the quick
# suite four and two times over: together they cost the sanitizer tier 6 of its CPU minutes. The
# label python-package skips the Python package's pytest run (about a CPU minute here): the
# binary's paths it drives (check, gen, the adapter protocol) run under the sanitizers in the
# command-line scripts, and the package itself is Python, which they cannot see into.
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build-asan --output-on-failure -j "$jobs" -LE "exhaustive|quick-suite-repeated|python-package"
phase "sanitizer tests"

ci/amd-compile-check.sh
phase "AMD compile check"
