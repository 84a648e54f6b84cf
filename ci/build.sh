#!/usr/bin/env bash
# ci/build.sh DIR [cmake args...]: configure and build into DIR (Ninja, warnings are errors).
set -euo pipefail
dir=$1; shift
cmake -S "$(dirname "$0")/.." -B "$dir" -G Ninja -DMQA_WERROR=ON "$@" >/dev/null
cmake --build "$dir" -j "$(nproc)"
