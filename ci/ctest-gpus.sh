#!/usr/bin/env bash
# ci/ctest-gpus.sh > gpus.json: a CTest resource spec file listing this host's GPUs (NVIDIA through
# nvidia-smi, AMD through rocm-smi), one slot each, for
#     ctest --test-dir build-gpu -L gpu-suite -j "$(nproc)" --resource-spec-file "$PWD/gpus.json"
# (an absolute path: ctest reads it after changing to the --test-dir)
# so that the suite tests (tests/support/gpu_suites.cmake) spread over the GPUs, one per GPU at a
# time. ci/ctest-gpus.example.json is what it writes on a host of four GPUs.
set -euo pipefail
if command -v nvidia-smi >/dev/null 2>&1; then
  count=$(nvidia-smi --query-gpu=index --format=csv,noheader | wc -l)
elif command -v rocm-smi >/dev/null 2>&1; then
  count=$(rocm-smi --showid --csv | grep -c '^card')
else
  echo "ci/ctest-gpus.sh: neither nvidia-smi nor rocm-smi found: no GPUs to list" >&2
  exit 2
fi
gpus=""
for ((i = 0; i < count; i++)); do
  gpus+="${gpus:+, }{ \"id\": \"$i\", \"slots\": 1 }"
done
printf '{ "version": { "major": 1, "minor": 0 }, "local": [ { "gpus": [ %s ] } ] }\n' "$gpus"
