#!/usr/bin/env bash
# Compiles every HIP source's device code for AMD gfx942 (MI300) with Debian 12's clang-19 and
# libamdhip64-dev's headers: no ROCm, no GPU, no link (Debian's device libraries lack gfx942, so
# -nogpulib; --cuda-device-only -S stops at the assembly). It catches what nvcc would not: HIP-only
# code paths, AMD builtins, wave64 assumptions that fail to compile. It then checks that the MFMA
# kernel really issues the fp8 matrix instruction. ci/install-deps.sh installs both packages.
#
#   ci/amd-compile-check.sh            # MQA_AMD_ARCH=gfx942 by default; CLANG=clang++-19
set -euo pipefail
cd "$(dirname "$0")/.."
clang=${CLANG:-clang++-19}
arch=${MQA_AMD_ARCH:-gfx942}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

count=0
# The GPU sources of the reference side (the device layer, the exact reference), of the kernels and
# of the device comparator.
shopt -s nullglob
for src in reference/gpu/*.hip reference/exact/gpu/*.hip kernels/gpu/*.hip validator/compare/device/*.hip; do
  flags=(-x hip "--offload-arch=$arch" -nogpulib --cuda-device-only -S -std=c++20 -O3
         -Wall -Wextra -Werror -I.)
  # As reference/exact/gpu/CMakeLists.txt: the exact reference must not contract a * b + c.
  [[ $src == */exact_kernel.hip || $src == */centre_kernel.hip ]] && flags+=(-ffp-contract=off)
  # As validator/compare/device/CMakeLists.txt: each allowance rounded as compare::allowance_at's.
  [[ $src == */element_judge.hip ]] && flags+=(-ffp-contract=off)
  "$clang" "${flags[@]}" "$src" -o "$work/$(basename "$src" .hip).s"
  count=$((count + 1))
done

if ! grep -q "v_mfma_f32_16x16x32_fp8_fp8" "$work/mfma_gfx942.s"; then
  echo "amd-compile-check: mfma_gfx942.hip does not issue v_mfma_f32_16x16x32_fp8_fp8 for $arch" >&2
  exit 1
fi
echo "amd-compile-check: $count HIP sources compiled for $arch; the MFMA kernel issues the fp8 matrix instruction"
