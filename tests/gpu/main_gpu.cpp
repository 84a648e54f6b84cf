// The GPU test binary (mqa_gpu_tests): Catch2 tests tagged [gpu], run by ci/gpu.sh on a machine
// with a GPU. CTest does not register them: the CPU CI has no GPU.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
