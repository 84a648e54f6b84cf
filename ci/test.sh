#!/usr/bin/env bash
# Every test: install, build (Release) and run all tests including the exhaustive tier, then
# rebuild with AddressSanitizer + UndefinedBehaviorSanitizer and run the tests again (the
# exhaustive tier excepted: it is the same code, 2^32 times), then compile the HIP kernels for
# AMD gfx942 with Debian's clang-19 so the AMD path cannot rot unseen. Where nvcc is installed the
# Release build also compiles the same kernels for NVIDIA (MQA_GPU=AUTO); no GPU is needed.
set -euo pipefail
cd "$(dirname "$0")/.."
ci/install-deps.sh
jobs=$(nproc)

ci/build.sh build -DCMAKE_BUILD_TYPE=Release
ctest --test-dir build --output-on-failure -j "$jobs"

# -O1, as AddressSanitizer's documentation advises: at -O0 the exact reference and the arithmetic
# models run ten times slower and the sanitizer tier alone would pass CI's time limit; asserts stay
# on (Debug), and -fno-omit-frame-pointer keeps the reports' stacks whole.
ci/build.sh build-asan -DCMAKE_BUILD_TYPE=Debug "-DCMAKE_CXX_FLAGS_DEBUG=-O1 -g" -DMQA_SANITIZE=ON
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build-asan --output-on-failure -j "$jobs" -LE exhaustive

ci/amd-compile-check.sh
