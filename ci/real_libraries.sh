#!/usr/bin/env bash
# The real libraries in the loop (ci/gpu.sh's `real-libraries` step; a CUDA machine with torch):
# DeepGEMM built from its source with the system compiler and AITER's Triton kernel, judged through
# mqacheck's conventions on the nightly suite (prefill and paged decode) under their honest
# contracts, and each planted bug of tests/gpu/real_libraries/planted.py caught with its class.
#
#   ci/real_libraries.sh BUILD_DIR OUT_DIR
#
# MQA_REAL_LIBRARY_RUNS picks runs by name (default all): deepgemm deepgemm-indexer deepgemm-paged
# deepgemm-fp4 deepgemm-fp4-paged dropped_head weights_off k_scale_bf16 inclusive_end in-process
# suite-in-process anchors aiter vllm.
#
# AITER's Triton kernel runs where .external/aiter holds ROCm/aiter's two files of it (the wrapper
# aiter/ops/triton/attention/fp8_mqa_logits.py and the kernel in _triton_kernels/attention/) and
# its commit in .external/aiter/COMMIT; tests/gpu/real_libraries/aiter_shim.py supplies what only
# an AMD GPU has. vLLM's gfx942 Triton kernel runs the same way where .external/vllm holds its one
# file (vllm/v1/attention/ops/triton_fp8_mqa_logits.py) and its commit in .external/vllm/COMMIT
# (tests/gpu/real_libraries/vllm_shim.py).
#
# The sources are not in the repository: .external/DeepGEMM holds deepseek-ai/DeepGEMM with its
# third-party/cutlass/include and third-party/fmt filled in, or that folder as .external/DeepGEMM.tar.xz,
# and the commit it was taken at in .external/DeepGEMM/COMMIT (.gitignore keeps .external/ out of
# git; python/README.md's "The real libraries" says how to fetch them and at which commits).
# DeepGEMM's extension is built with /usr/bin/g++: a compiler that links libstdc++ statically
# gives it a second C++ runtime next to torch's, and it crashes at its first call (in std::regex).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:?usage: ci/real_libraries.sh BUILD_DIR OUT_DIR}
out=${2:?usage: ci/real_libraries.sh BUILD_DIR OUT_DIR}
deepgemm=.external/DeepGEMM aiter=.external/aiter vllm=.external/vllm
mkdir -p "$out"
export PYTHONPATH=$PWD/python:$PWD/tests/gpu/real_libraries${PYTHONPATH:+:$PYTHONPATH}
export DG_JIT_CACHE_DIR=${DG_JIT_CACHE_DIR:-/tmp/deepgemm-jit}
# DeepGEMM on sm90 and Triton's tl.dot on Hopper: wgmma chained over head_dim; relu as fmaxf or
# tl.maximum (NaN dropped).
contract=(--accumulate sm90-wgmma --relu fmax)

status=0 ran=()
wanted() { [[ -z ${MQA_REAL_LIBRARY_RUNS:-} || " $MQA_REAL_LIBRARY_RUNS " == *" $1 "* ]]; }
judge() {  # RUN NAME CONVENTION FUNCTION [mqacheck run flags...]
  wanted "$1" || return 0
  local name=$2 convention=$3 function=$4
  shift 4
  ran+=("$name")
  "$build/mqacheck" run --cases cases/nightly.toml --brief --timeout 900 \
    --kernel "python3 -m mqacheck.adapter --convention $convention --device cuda --function $function --label $name ${adapter_extra:-}" \
    --out "$out/$name" "$@" 2>&1 | tee "$out/$name.log" || status=1
}
any_wanted() {  # RUN...
  local run
  for run in "$@"; do wanted "$run" && return 0; done
  return 1
}
missing() {  # RUN... : a run asked for by name whose library is absent is a failure, not a skip
  local run
  for run in "$@"; do
    if [[ -n ${MQA_REAL_LIBRARY_RUNS:-} && " $MQA_REAL_LIBRARY_RUNS " == *" $run "* ]]; then
      echo "real-libraries: $run was asked for and its library's source is absent"
      status=1
    fi
  done
}

# DeepGEMM, built as its own development build does (develop.sh): CUTLASS's headers linked where
# its JIT looks, the extension built and linked into the package folder. A machine the sources
# travel to as one archive (.external/DeepGEMM.tar.xz) unpacks it first.
deepgemm_runs=(deepgemm deepgemm-indexer deepgemm-paged deepgemm-fp4 deepgemm-fp4-paged dropped_head weights_off
               k_scale_bf16 inclusive_end in-process suite-in-process anchors)
if [[ ! -d $deepgemm && -f $deepgemm.tar.xz ]]; then
  tar -xJf "$deepgemm.tar.xz" -C .external
fi
if [[ ! -f $deepgemm/setup.py || ! -d $deepgemm/third-party/cutlass/include/cute ]]; then
  echo "real-libraries: no DeepGEMM source with CUTLASS in $deepgemm: its runs skipped"
  missing "${deepgemm_runs[@]}"
elif ! any_wanted "${deepgemm_runs[@]}"; then
  : # none of DeepGEMM's runs asked for: not built
elif ! (
  set -e
  cd "$deepgemm"
  ln -sfn "$PWD/third-party/cutlass/include/cutlass" deep_gemm/include/cutlass
  ln -sfn "$PWD/third-party/cutlass/include/cute" deep_gemm/include/cute
  CXX=/usr/bin/g++ CC=/usr/bin/gcc DG_USE_LOCAL_VERSION=0 MAX_JOBS=$(nproc) python3 setup.py build
  so=$(find build -name '_C*.so' | head -1)
  [[ -n $so ]] || { echo "DeepGEMM's build made no _C extension"; exit 1; }
  ln -sfn "$PWD/$so" deep_gemm/
) >"$out/deepgemm-build.log" 2>&1; then
  tail -30 "$out/deepgemm-build.log"
  echo "real-libraries: DeepGEMM did not build"
  status=1
else
  commit=$(cat "$deepgemm/COMMIT" 2>/dev/null || echo unknown)
  export PYTHONPATH=$PYTHONPATH:$PWD/$deepgemm
  judge deepgemm "deepgemm-$commit" deepgemm deep_gemm:fp8_mqa_logits --operation prefill "${contract[@]}"
  # The whole indexer: DeepGEMM's logits, then torch.topk over them as vLLM's fallback does.
  adapter_extra="--topk-convention torch-topk" judge deepgemm-indexer "deepgemm-indexer-$commit" deepgemm \
    deep_gemm:fp8_mqa_logits --operation prefill --topk-indices --topk-columns relative --topk-sorted "${contract[@]}"
  judge deepgemm-paged "deepgemm-paged-$commit" deepgemm-paged deep_gemm:fp8_paged_mqa_logits --operation paged \
    --mask dont-care "${contract[@]}"
  # DeepGEMM's current API (fp8_mqa_logits and fp8_paged_mqa_logits forward to these).
  judge deepgemm-fp4 "deepgemm-fp4-$commit" deepgemm-fp4 deep_gemm:fp8_fp4_mqa_logits --operation prefill "${contract[@]}"
  judge deepgemm-fp4-paged "deepgemm-fp4-paged-$commit" deepgemm-fp4-paged deep_gemm:fp8_fp4_paged_mqa_logits \
    --operation paged --mask dont-care "${contract[@]}"
  planted=tests/gpu/real_libraries/planted.py
  for entry in dropped_head:error-bound weights_off:error-bound k_scale_bf16:error-bound inclusive_end:mask-shift; do
    fn=${entry%%:*}
    judge "$fn" "deepgemm-$fn" deepgemm "$planted:$fn" --operation prefill --must-produce "${entry#*:}" "${contract[@]}"
  done
  # DeepGEMM judged in its own process (the pytest plugin, mqacheck._core), each verdict the binary's.
  core=$(compgen -G "$build/python/mqacheck/_core*.so" | head -1 || true)
  if wanted in-process && [[ -n $core ]]; then
    ran+=(in-process)
    MQACHECK_CORE=$PWD/$core python3 -m pytest -q -p no:cacheprovider -p mqacheck.pytest_plugin \
      tests/gpu/real_libraries/test_in_process.py --mqa-suite cases/nightly.toml --mqa-binary "$build/mqacheck" 2>&1 |
      tee "$out/in-process.log" || status=1
  elif wanted in-process; then
    echo "real-libraries: in-process was asked for and $build made no mqacheck._core"
    [[ -n ${MQA_REAL_LIBRARY_RUNS:-} ]] && status=1
  fi
  # DeepGEMM through the in-process suite runner (python3 -m mqacheck run, mqacheck._core): the same
  # report as the `deepgemm` run's through the adapter, verdict for verdict (python/tests/same_report.py),
  # and a planted inclusive end caught with its class.
  if wanted suite-in-process && [[ -n $core ]]; then
    ran+=(suite-in-process)
    MQACHECK_CORE=$PWD/$core python3 -m mqacheck run --cases cases/nightly.toml --convention deepgemm \
      --function deep_gemm:fp8_mqa_logits --label "deepgemm-$commit" --out "$out/suite-in-process" "${contract[@]}" \
      2>&1 | tee "$out/suite-in-process.log" || status=1
    if [[ -f $out/deepgemm-$commit/report.json && -f $out/suite-in-process/report.json ]]; then
      python3 python/tests/same_report.py "$out/suite-in-process/report.json" "$out/deepgemm-$commit/report.json" 2>&1 |
        tee -a "$out/suite-in-process.log" || status=1
    elif wanted deepgemm; then
      echo "real-libraries: suite-in-process: no report to compare with the deepgemm run's"
      status=1
    fi
    MQACHECK_CORE=$PWD/$core python3 -m mqacheck run --cases cases/nightly.toml --convention deepgemm \
      --function "$planted:inclusive_end" --must-produce mask-shift --out "$out/suite-in-process-inclusive_end" \
      "${contract[@]}" 2>&1 | tee -a "$out/suite-in-process.log" || status=1
  elif wanted suite-in-process; then
    echo "real-libraries: suite-in-process was asked for and $build made no mqacheck._core"
    [[ -n ${MQA_REAL_LIBRARY_RUNS:-} ]] && status=1
  fi
  # The anchors' own checks next to mqacheck's verdict on DeepGEMM and its planted bugs.
  if wanted anchors; then
    ran+=(anchors)
    python3 tests/bench/anchors.py "$build/mqacheck" 2>&1 |
      tee "$out/anchors.md" || status=1
  fi
fi

# AITER's Triton kernel: k_scale before relu.
if [[ ! -f $aiter/aiter/ops/triton/attention/fp8_mqa_logits.py ]]; then
  echo "real-libraries: no AITER source in $aiter: its run skipped"
  missing aiter
else
  aiter_commit=$(cat "$aiter/COMMIT" 2>/dev/null || echo unknown)
  judge aiter "aiter-triton-$aiter_commit" aiter tests/gpu/real_libraries/aiter_shim.py:fp8_mqa_logits \
    --operation prefill --scale before-relu "${contract[@]}"
fi
# vLLM's gfx942 Triton kernel (AITER's kernel as vLLM vendors it): k_scale before relu, -inf fill.
if [[ ! -f $vllm/vllm/v1/attention/ops/triton_fp8_mqa_logits.py ]]; then
  echo "real-libraries: no vLLM source in $vllm: its run skipped"
  missing vllm
else
  vllm_commit=$(cat "$vllm/COMMIT" 2>/dev/null || echo unknown)
  judge vllm "vllm-gfx942-triton-${vllm_commit:0:10}" vllm tests/gpu/real_libraries/vllm_shim.py:fp8_mqa_logits_gfx942 \
    --operation prefill --scale before-relu "${contract[@]}"
fi
echo "real-libraries: ${ran[*]:-nothing run} $([[ $status == 0 ]] && echo passed || echo FAILED)"
exit $status
