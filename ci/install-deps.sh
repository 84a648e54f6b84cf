#!/usr/bin/env bash
# Installs mqacheck's build and test dependencies from Debian 12's archive. Idempotent: a second
# run installs nothing. Needs root (or sudo) the first time only.
set -euo pipefail

packages=(
  cmake ninja-build g++ pkg-config
  libboost-dev            # Boost.Multiprecision (header-only)
  libxtensor-dev xtl-dev  # arrays and .npy I/O
  libtomlplusplus-dev     # case files
  catch2                  # tests (Catch2 2.13)
  libcli11-dev libfmt-dev nlohmann-json3-dev
  libopenblas-dev         # dgemm engine for exact e4m3 dot products
  libxxhash-dev           # XXH3-128 digests of bundles
  python3 python3-numpy   # scripts and cross-language test oracles
  python3-pytest python3-venv python3-setuptools  # the Python package (python/): tests, offline install
  python3-dev pybind11-dev libdlpack-dev  # its extension mqacheck._core (python/core): the judge in process
  clang-19 libamdhip64-dev  # AMD (gfx942) compile check of the HIP kernels
  chromium                # report.html loaded in a real browser (tests/reports/html_browser_test.py)
  slurm-wlm munge         # the quick suite as a Slurm job array on a local cluster (tests/cli/slurm_shards_test.py)
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
sudo=""
[[ $(id -u) -ne 0 ]] && sudo="sudo"
$sudo apt-get update -q
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
