#!/usr/bin/env bash
# Every test: install, build (Release) and run the tiers the sanitizers cannot afford (the
# exhaustive tier, the scripts that re-run the quick suite, the Python package), then rebuild with
# AddressSanitizer + UndefinedBehaviorSanitizer and run every other test there, then compile the HIP
# kernels for AMD gfx942 with Debian's clang-19 so the AMD path cannot rot unseen. Where nvcc is
# installed the Release build also compiles the same kernels for NVIDIA (MQA_GPU=AUTO); no GPU is
# needed.
set -euo pipefail
cd "$(dirname "$0")/.."
# Each phase's wall time is printed as it ends: CI's budget is 25 minutes on 2 cores.
phase_start=$SECONDS
phase() { echo "ci/test.sh: $1 took $((SECONDS - phase_start)) s"; phase_start=$SECONDS; }

ci/install-deps.sh
phase "install"
jobs=$(nproc)

# Each test runs in one tier (tests/CMakeLists.txt labels them). The Release tier takes the
# exhaustive tier (2^32 conversions per format: under the sanitizers it would take the whole
# budget), merge's, certify's and the Slurm job array's scripts (they re-run the quick suite four, two
# and two times over; their own code, merging and certifying JSON reports and a local Slurm cluster,
# is small, and the sanitizer tier runs the quick suite itself) and the Python package's pytest run (Python, which the sanitizers cannot see into;
# the binary's paths it drives run under them in the command-line scripts). Every other test runs
# under the sanitizers, at -O1 with asserts on. Running those a second time against the Release
# build, with building the unit tests for it, cost about a tenth of CI's time (docs/measurements.md);
# the Release binary still judges the whole quick suite in the scripts above. So the Release build
# leaves out the unit-test binaries (MQA_UNIT_TESTS=OFF: the exhaustive tier has its own).
release_tier="exhaustive|quick-suite-repeated|python-package"

ci/build.sh build -DCMAKE_BUILD_TYPE=Release -DMQA_UNIT_TESTS=OFF
phase "Release build"
ctest --test-dir build --output-on-failure -j "$jobs" -L "$release_tier"
phase "Release tests"

# -O1, as AddressSanitizer's documentation advises: at -O0 the exact reference and the arithmetic
# models run ten times slower and the sanitizer tier alone would pass CI's time limit; asserts stay
# on (Debug), and -fno-omit-frame-pointer keeps the reports' stacks whole. -g1 gives the reports'
# stacks their functions, files and lines, without the variables' and types' debug information
# that full -g spends compile time on and no report uses.
# A unity build (CMake merges each target's files sixteen at a time): the sanitizer tier's build
# takes about 40% less time than file by file (most of that is the same headers' templates
# instrumented once per file), and sixteen at a time less CPU than eight (docs/measurements.md has
# the figures). The Release build stays one
# file at a time, as users build it, so a product file that compiles only after another one's
# includes or using-declarations is still caught there; the unit tests' files are compiled only
# here, merged (a plain local build compiles them one at a time).
# The GPU kernels are host-sanitizer-blind and already built once: MQA_GPU=OFF here.
ci/build.sh build-asan -DCMAKE_BUILD_TYPE=Debug "-DCMAKE_CXX_FLAGS_DEBUG=-O1 -g1" -DMQA_SANITIZE=ON -DMQA_GPU=OFF \
  -DCMAKE_UNITY_BUILD=ON -DCMAKE_UNITY_BUILD_BATCH_SIZE=16
phase "sanitizer build"
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build-asan --output-on-failure -j "$jobs" -LE "$release_tier"
phase "sanitizer tests"

ci/amd-compile-check.sh
phase "AMD compile check"
