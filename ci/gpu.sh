#!/usr/bin/env bash
# The GPU suite in one command, for a machine with a GPU and its toolchain (nvcc, or ROCm) but no
# package access, such as the H200 machine: unpack the Debian 12 -dev packages carried in .debs/
# into a private prefix (never into /), build the GPU targets, run the [gpu] tests and the
# full-size case. Logs and the Markdown report go to $OUT (default build-gpu/logs).
#
#   ci/gpu.sh --download   # on Debian 12 with apt: fetch the packages into .debs/ (git ignores it)
#   ci/gpu.sh              # on the GPU machine: build and run everything
#
# Environment: MQA_GPU (AUTO, CUDA or HIP; default AUTO), MQA_DEPS_PREFIX (default
# /tmp/mqa-deps), MQA_GPU_FULL_ARGS (extra arguments for mqa_gpu_full, e.g. "--m 2048"),
# MQA_GPU_SKIP (steps to leave out, e.g. "sanitizer full": nightly, tests, sanitizer, full, probe,
# triton-probe, triton-nightly, python, in-process, real-libraries, golden-f64, golden-fp4, table, peaks), MQA_GPU_TEST_SPEC (a Catch2 test
# spec for the [gpu] tests, e.g. "[paged]"; default all), MQA_TRITON_FUNCTIONS (which served
# functions triton-nightly runs, "name[:class]"), MQA_GOLDEN_F64_OUT and MQA_GOLDEN_FP4_OUT (where
# the golden steps write; default $OUT/golden-f64, $OUT/golden-fp4), MQA_TABLE_WORK (the table's
# bundle and output, about 4.5 GB; default /tmp/mqa-table), MQA_GPU_PROFILE (set: profile the exact
# reference's kernels with Nsight Compute, when the machine has it; "sass": also the integer
# engine's kernel per SASS instruction; "judge": a verdict's kernels instead, per SASS instruction, at
# MQA_GPU_PROFILE_SHAPE, default 2048x16384; of the kernels MQA_GPU_PROFILE_KERNELS names, default
# "judge_kernel centre_truncating"), MQA_GPU_STEP_TIMEOUT (seconds the [gpu] tests and the
# full-size run may each take before they are killed and count as failed; default 900),
# MQA_GPU_CXX (the host C++ compiler; default /usr/bin/g++ where it exists), MQA_IN_PROCESS_SHAPES (the in-process step's shapes; default "--shape 2048x16384 --shape 8192x65536").
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  libboost1.74-dev xtl-dev libxtensor-dev libtomlplusplus-dev libtomlplusplus3 libcli11-dev
  libfmt-dev libfmt9 nlohmann-json3-dev catch2
  libopenblas-dev libopenblas-pthread-dev libopenblas0-pthread libopenblas0 libgfortran5 libquadmath0
  libxxhash-dev libxxhash0
  libdlpack-dev  # the Python extension's DLPack header (pybind11: the one the machine's Python has)
)
if [[ ${1:-} == --download ]]; then
  mkdir -p .debs
  (cd .debs && apt-get download "${packages[@]}")
  exit 0
fi

# The Python extension (python/core) is loaded next to torch: a compiler that links libstdc++
# statically (the H200 image's /opt/gcc wrapper, which its environment names in CXX) gives it a
# second copy of the C++ runtime, and it crashes at its first call. The system's g++ links the
# shared one; MQA_GPU_CXX names another.
if [[ -n ${MQA_GPU_CXX:-} ]]; then
  export CXX=$MQA_GPU_CXX
elif [[ -x /usr/bin/g++ ]]; then
  export CXX=/usr/bin/g++
fi
out=${OUT:-$PWD/build-gpu/logs}
mkdir -p "$out"
cmake_args=(-DCMAKE_BUILD_TYPE=Release -DMQA_GPU="${MQA_GPU:-AUTO}" -DMQA_TESTS=ON
            -DCMAKE_POLICY_VERSION_MINIMUM=3.5)  # CMake 4 refuses old minimums in some configs
if compgen -G ".debs/*.deb" >/dev/null; then
  prefix=${MQA_DEPS_PREFIX:-/tmp/mqa-deps}
  mkdir -p "$prefix"
  for deb in .debs/*.deb; do dpkg -x "$deb" "$prefix"; done
  lib=$prefix/usr/lib/x86_64-linux-gnu
  # Debian reaches OpenBLAS through update-alternatives links that dpkg -x does not create.
  ln -sf openblas-pthread/libopenblas.so "$lib/libopenblas.so"
  export LD_LIBRARY_PATH=$lib:$lib/openblas-pthread${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  export CXXFLAGS="-isystem $prefix/usr/include -isystem $prefix/usr/include/x86_64-linux-gnu/openblas-pthread ${CXXFLAGS:-}"
  cmake_args+=(-DCMAKE_PREFIX_PATH="$prefix/usr")
fi
# The Python extension (python/core) is built with the pybind11 the machine's Python has (pip's
# package, where Debian's pybind11-dev is not installed).
if pybind11_dir=$(python3 -m pybind11 --cmakedir 2>/dev/null); then
  cmake_args+=(-Dpybind11_DIR="$pybind11_dir")
fi
# The compiler above also for a build folder configured before with another (CMake reads CXX at
# the first configure only; a changed compiler makes it configure afresh).
if [[ -n ${CXX:-} ]]; then
  cmake_args+=(-DCMAKE_CXX_COMPILER="$CXX")
fi

{
  echo "== $(date -u +%FT%TZ) $(uname -m), $(nproc) cores"
  command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  command -v nvcc >/dev/null && nvcc --version | tail -1
  c++ --version | head -1
  cmake --version | head -1
  echo "transparent huge pages: $(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null || echo unknown)"
} 2>&1 | tee "$out/environment.log"
# Multi-GiB host buffers (reference, outputs) are first-touched page by page; let glibc's malloc
# ask for transparent huge pages where the kernel allows them (glibc >= 2.35; ignored elsewhere).
export GLIBC_TUNABLES=glibc.malloc.hugetlb=1${GLIBC_TUNABLES:+:$GLIBC_TUNABLES}

set -o pipefail
cmake -S . -B build-gpu -G Ninja "${cmake_args[@]}" 2>&1 | tee "$out/configure.log"
skip() { [[ " ${MQA_GPU_SKIP:-} " == *" $1 "* ]]; }
targets=(mqacheck)
{ skip tests && skip sanitizer; } || targets+=(mqa_gpu_tests)  # the sanitizer step runs its hidden tests
{ skip full && skip table && [[ -z ${MQA_GPU_PROFILE:-} || $MQA_GPU_PROFILE == judge ]]; } || targets+=(mqa_gpu_full)
{ skip python && skip in-process && skip real-libraries && [[ ${MQA_GPU_PROFILE:-} != judge ]]; } ||
  ! grep -q "mqa_python_core" build-gpu/build.ninja 2>/dev/null ||
  targets+=(mqa_python_core)
grep -q "mqa_mma_probe" build-gpu/build.ninja 2>/dev/null && ! { skip probe && skip triton-probe; } && targets+=(mqa_mma_probe)
grep -q "mqa_gpu_peaks" build-gpu/build.ninja 2>/dev/null && ! skip peaks && targets+=(mqa_gpu_peaks)
cmake --build build-gpu -j "$(nproc)" --target "${targets[@]}" 2>&1 | tee "$out/build.log"

status=0
# A kernel that hangs (a barrier protocol gone wrong) would otherwise hold the device until the
# caller's own limit: the test and full-size steps are killed after this many seconds.
step_timeout=${MQA_GPU_STEP_TIMEOUT:-900}
# float64 -> fp8 golden vectors from the producers installed here (ml_dtypes, torch on the CPU and
# the GPU, __nv_cvt_double_to_fp8 compiled by nvcc and run on the device). Copy the folder's files
# into tests/data/golden/fp8/ to update the repository's copy (its README says what each one is).
if ! skip golden-f64; then
  python3 tests/data/golden/fp8/generate_f64.py "${MQA_GOLDEN_F64_OUT:-$out/golden-f64}" 2>&1 |
    tee "$out/golden-f64.log" || status=1
fi
# e2m1fn (fp4) and bfloat16 golden vectors: ml_dtypes, DeepGEMM's cast in torch on the
# CPU and the GPU. Copy the folder's files into tests/data/golden/fp4/ (its README says what).
if ! skip golden-fp4; then
  python3 tests/data/golden/fp4/generate.py "${MQA_GOLDEN_FP4_OUT:-$out/golden-fp4}" 2>&1 |
    tee "$out/golden-fp4.log" || status=1
fi
# The nightly suite through the product itself: every HIP variant passes, every GPU mutant is caught.
if ! skip nightly; then
  build-gpu/mqacheck variants | tee "$out/variants.log"
  build-gpu/mqacheck run --cases cases/nightly.toml --out "$out/nightly" 2>&1 | tee "$out/nightly.log" || status=1
fi
# shellcheck disable=SC2086  # the spec is empty (all tests) or one Catch2 test spec
skip tests || timeout "$step_timeout" build-gpu/tests/gpu/mqa_gpu_tests --durations yes ${MQA_GPU_TEST_SPEC:+"$MQA_GPU_TEST_SPEC"} 2>&1 |
  tee "$out/tests.log" || status=1
# compute-sanitizer (NVIDIA): memcheck and racecheck must find nothing in the correct kernels and
# must find the race mutant's shared-memory hazard.
if ! skip sanitizer && command -v compute-sanitizer >/dev/null; then
  sanitize() {  # TOOL TEST-TAG
    timeout 300 compute-sanitizer --error-exitcode 3 --tool "$1" build-gpu/tests/gpu/mqa_gpu_tests "$2"
  }
  {
    sanitize memcheck "[sanitizer-correct]" && echo "memcheck, correct kernels: clean" || status=1
    sanitize racecheck "[sanitizer-correct]" && echo "racecheck, correct kernels: clean" || status=1
    race=$(sanitize racecheck "[sanitizer-race]" 2>&1 || true)
    echo "$race" | tail -20
    if grep -q -E "Race reported|[1-9][0-9]* hazards? displayed" <<<"$race"; then
      echo "racecheck, race mutant: hazard reported, as planted"
    else
      echo "racecheck, race mutant: NOT detected"; status=1
    fi
  } >"$out/sanitizer.log" 2>&1
  cat "$out/sanitizer.log"
fi
# shellcheck disable=SC2086  # MQA_GPU_FULL_ARGS is a list of arguments
skip full || timeout "$step_timeout" build-gpu/tests/gpu/mqa_gpu_full --report "$out/full.md" ${MQA_GPU_FULL_ARGS:-} 2>&1 |
  tee "$out/full.log" || status=1
# On request (MQA_GPU_PROFILE=1): Nsight Compute on the exact reference's kernels at a smaller
# shape (both dot engines), to see what bounds them. MQA_GPU_PROFILE=judge: on a verdict's own
# kernels instead (the device comparator's judge_kernel and the modelled centre's centre_truncating),
# through the in-process bench at 2048 x 16384 (MQA_GPU_PROFILE_SHAPE) under sm90-wgmma.
if [[ -n ${MQA_GPU_PROFILE:-} ]]; then
  ncu=$(command -v ncu || ls /usr/local/cuda*/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1 || true)
  if [[ -n $ncu && $MQA_GPU_PROFILE == judge ]]; then
    core=$(compgen -G "build-gpu/python/mqacheck/_core*.so" | head -1 || true)
    [[ -n $core ]] || { echo "MQA_GPU_PROFILE=judge: no mqacheck._core was built" | tee "$out/profile-judge.log"; status=1; }
    # Each kernel's first launch, every section, and instruction by instruction (executed counts and
    # stall samples per SASS line) as CSV.
    for kernel in ${core:+${MQA_GPU_PROFILE_KERNELS:-judge_kernel centre_truncating}}; do
      MQACHECK_CORE="$PWD/$core" PYTHONPATH=python PYTHONDONTWRITEBYTECODE=1 "$ncu" --kernel-name "regex:$kernel" \
        --launch-count 1 --set full --import-source yes -f -o "$out/$kernel" \
        python3 tests/bench/in_process_bench.py build-gpu/mqacheck --shape "${MQA_GPU_PROFILE_SHAPE:-2048x16384}" \
        --in-process-only --repeats 1 \
        >"$out/profile-$kernel.log" 2>&1 || status=1
      "$ncu" --import "$out/$kernel.ncu-rep" --page details >"$out/$kernel-details.txt" 2>>"$out/profile-$kernel.log" || status=1
      # Built with CUDAFLAGS=-lineinfo: each SASS line beside the source line it came from.
      "$ncu" --import "$out/$kernel.ncu-rep" --page source --csv \
        --print-source "$([[ ${CUDAFLAGS:-} == *-lineinfo* ]] && echo cuda,sass || echo sass)" >"$out/$kernel-sass.csv" \
        2>>"$out/profile-$kernel.log" || status=1
    done
  elif [[ -n $ncu ]]; then
    "$ncu" --kernel-name "regex:exact_(tiles|magnitudes)" --launch-count 3 --section SpeedOfLight --section WarpStateStats \
      --section LaunchStats --section Occupancy --section ComputeWorkloadAnalysis --section InstructionStats \
      --section MemoryWorkloadAnalysis --section SchedulerStats \
      build-gpu/tests/gpu/mqa_gpu_full --m 1024 --n 16384 --variants hip-tiled 2>&1 | tee "$out/profile.log" || status=1
    # MQA_GPU_PROFILE=sass: the integer engine's kernel (its first form to run: wgmma on an H200)
    # instruction by instruction (executed counts and stall samples per SASS line) as CSV, and
    # every section of the full set as text.
    if [[ $MQA_GPU_PROFILE == sass ]]; then
      "$ncu" --kernel-name "regex:exact_tiles_(wgmma|int8)" --launch-count 1 --set full -f -o "$out/integer" \
        build-gpu/tests/gpu/mqa_gpu_full --m 1024 --n 16384 --variants hip-tiled >"$out/profile-sass.log" 2>&1 || status=1
      "$ncu" --import "$out/integer.ncu-rep" --page source --csv --print-source sass >"$out/integer-sass.csv" \
        2>>"$out/profile-sass.log" || status=1
      "$ncu" --import "$out/integer.ncu-rep" --page details >"$out/integer-details.txt" 2>>"$out/profile-sass.log" || status=1
    fi
  else
    echo "MQA_GPU_PROFILE: no ncu on this machine" | tee "$out/profile.log"
  fi
fi
# The device's ceilings for the exact reference's integer engine: mma.sync s8, float64 FMA and
# int32 -> float64 conversions, each measured (the roofline; docs/measurements.md); and the host
# link, 4 GiB each way by the runtime's pageable copy against the pinned staging of
# reference/gpu/staged_copy.hpp.
if [[ -x build-gpu/tests/gpu/mqa_gpu_peaks ]] && ! skip peaks; then
  build-gpu/tests/gpu/mqa_gpu_peaks 2>&1 | tee "$out/peaks.log" || status=1
fi
# The sm90-wgmma model against the hardware: our inline-PTX wgmma, then Triton's tl.dot
# (reference/mma/README.md). Golden samples of both land in $out/mma for tests/data/golden/mma.
if [[ -x build-gpu/tests/gpu/mqa_mma_probe ]]; then
  skip probe || build-gpu/tests/gpu/mqa_mma_probe --out "$out/mma" 2>&1 | tee "$out/probe.log" || status=1
  if ! skip triton-probe && python3 -c "import triton" 2>/dev/null; then
    { python3 kernels/triton/probe.py "$out/mma" && build-gpu/tests/gpu/mqa_mma_probe --verify-triton "$out/mma"; } \
      2>&1 | tee "$out/triton-probe.log" || status=1
  fi
fi
# Our Triton kernel over the nightly suite through `run --kernel`: the kernel passes
# under the sm90-wgmma model, each planted bug is caught with its class; then the adapter's
# overhead per case at M=2048, N=16384 as a ratio to the kernel's own time.
if ! skip triton-nightly && python3 -c "import triton" 2>/dev/null; then
  served="kernels/triton/served.py"
  for entry in ${MQA_TRITON_FUNCTIONS:-correct inclusive_end:mask-shift tail_tile_dropped:unwritten}; do
    fn=${entry%%:*}; must=(); [[ $entry == *:* ]] && must=(--must-produce "${entry#*:}")
    PYTHONPATH=python build-gpu/mqacheck run --cases cases/nightly.toml --accumulate sm90-wgmma --relu fmax \
      --kernel "python3 -m mqacheck.adapter --device cuda --function $served:$fn --label triton-$fn" "${must[@]}" \
      --out "$out/triton-$fn" 2>&1 | tee "$out/triton-$fn.log" || status=1
  done
  PYTHONPATH=python python3 tests/bench/adapter_bench.py build-gpu/mqacheck \
    --adapter "python3 -m mqacheck.adapter --device cuda --function $served:correct" -- --accumulate sm90-wgmma --relu fmax \
    2>&1 | tee "$out/adapter-bench.log" || status=1
fi
# The production table: gen, our Triton kernel, check of its output, the exact reference's kernels and
# run with 8 variants on the production case, each against its target (tests/bench/production_table.py).
if ! skip table; then
  full_bin=(); [[ -x build-gpu/tests/gpu/mqa_gpu_full ]] && full_bin=(--gpu-full build-gpu/tests/gpu/mqa_gpu_full)
  PYTHONDONTWRITEBYTECODE=1 python3 tests/bench/production_table.py build-gpu/mqacheck "${MQA_TABLE_WORK:-/tmp/mqa-table}" \
    "$out/production-table.md" "${full_bin[@]}" 2>&1 | tee "$out/table.log" || status=1
fi
# The extension mqacheck._core this build made, where it made one (python/core).
core=$(compgen -G "build-gpu/python/mqacheck/_core*.so" | head -1 || true)
# The Python package's tests that need torch, CUDA or Triton (our Triton kernel among them), in
# process through the extension and through the binary.
if ! skip python && python3 -c "import torch" 2>/dev/null; then
  (cd python && MQACHECK="$PWD/../build-gpu/mqacheck" MQACHECK_CORE="${core:+$PWD/../$core}" PYTHONDONTWRITEBYTECODE=1 \
     python3 -m pytest -q -p no:cacheprovider tests 2>&1) | tee "$out/python.log" || status=1
fi
# The real libraries (DeepGEMM) judged through the conventions, where .external/ holds their
# sources (ci/real_libraries.sh says how).
if ! skip real-libraries && python3 -c "import torch" 2>/dev/null; then
  ci/real_libraries.sh build-gpu "$out/real-libraries" || status=1
fi
# What a verdict costs from Python (in process cold and warm, through the binary) as a ratio to the
# kernel's own time, at the nightly shape and at production (tests/bench/in_process_bench.py):
# DeepGEMM's kernel where the real-libraries step built it, else our Triton kernel.
if ! skip in-process && [[ -n $core ]] && python3 -c "import triton" 2>/dev/null; then
  bench_kernel=triton bench_path=python
  if compgen -G ".external/DeepGEMM/deep_gemm/_C*.so" >/dev/null &&
     PYTHONPATH=.external/DeepGEMM python3 -c "import deep_gemm" 2>/dev/null; then
    bench_kernel=deepgemm bench_path=python:.external/DeepGEMM
  fi
  # The kernel's contract (sm90-wgmma: the modelled centre of every row), then a bounded one (no
  # instruction model: judged around the reference itself), on each shape's one bundle and kernel time.
  MQACHECK_CORE="$PWD/$core" PYTHONPATH=$bench_path PYTHONDONTWRITEBYTECODE=1 python3 tests/bench/in_process_bench.py \
    build-gpu/mqacheck --kernel $bench_kernel ${MQA_IN_PROCESS_SHAPES:---shape 2048x16384 --shape 8192x65536} \
    -- --accumulate sm90-wgmma --relu fmax -- --accumulate fp22-truncated --relu fmax 2>&1 |
    tee "$out/in-process-bench.log" || status=1
  # What a suite run costs per case: the in-process runner (python3 -m mqacheck run) against `run
  # --kernel` through the adapter (tests/bench/suite_run_bench.py).
  MQACHECK_CORE="$PWD/$core" PYTHONPATH=python PYTHONDONTWRITEBYTECODE=1 python3 tests/bench/suite_run_bench.py \
    build-gpu/mqacheck ${MQA_IN_PROCESS_SHAPES:---shape 2048x16384 --shape 8192x65536} 2>&1 |
    tee -a "$out/in-process-bench.log" || status=1
fi
echo "ci/gpu.sh: $([[ $status == 0 ]] && echo passed || echo FAILED)"
exit $status
