#!/bin/sh
# ctest_gpu.sh COMMAND ARGS...: runs a suite test on the GPU CTest gave it.
# A test with RESOURCE_GROUPS "gpus:1" run by `ctest --resource-spec-file FILE` finds its GPU in
# CTEST_RESOURCE_GROUP_0_GPUS ("id:3,slots:1"), the id being the device's CUDA/HIP index as the
# spec file lists it (ci/ctest-gpus.sh writes one). The command then sees that GPU only, as device
# 0. Without a spec file CTest allocates nothing and the command sees every GPU.
set -eu
if [ -n "${CTEST_RESOURCE_GROUP_0_GPUS:-}" ]; then
  id=${CTEST_RESOURCE_GROUP_0_GPUS#id:}
  id=${id%%,*}
  CUDA_VISIBLE_DEVICES=$id
  HIP_VISIBLE_DEVICES=$id
  export CUDA_VISIBLE_DEVICES HIP_VISIBLE_DEVICES
fi
exec "$@"
