#!/usr/bin/env bash
# The main job: install, build, then run mqacheck's quick demonstration.
# Later issues turn this into the quick suite (cases/quick.toml).
set -euo pipefail
cd "$(dirname "$0")/.."
ci/install-deps.sh
ci/build.sh build -DCMAKE_BUILD_TYPE=Release -DMQA_TESTS=OFF
bin=build/mqacheck
echo
echo "== What each producer makes of the values where they disagree (e4m3fn, OCP) =="
$bin fp8 compare --format e4m3fn 448 449 464 465 480 1e-4 inf nan -nan
echo
echo "== The same values as e4m3fnuz (gfx942): half the range, 0x80 is NaN =="
$bin fp8 compare --format e4m3fnuz 224 240 241 248 249 -1e-4 inf nan
echo
echo "== e5m2: NaN bytes differ (ml_dtypes 0x7E, torch and CUDA 0x7F) =="
$bin fp8 compare --format e5m2 57344 61439 61440 nan -inf
