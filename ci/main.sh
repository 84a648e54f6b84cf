#!/usr/bin/env bash
# The main job: install, build, then run the quick suite (cases/quick.toml): every layout and
# every bug class at small shapes, correct variants clean, every mutant caught. Reports go to
# build-main/quick-reports (JSON, JUnit XML, Markdown, HTML). Exit 0 when every expectation holds.
# The log stays short (--brief): rows only where an expectation broke; the reports hold every row.
set -euo pipefail
cd "$(dirname "$0")/.."
ci/install-deps.sh
ci/build.sh build-main -DCMAKE_BUILD_TYPE=Release -DMQA_TESTS=OFF
exec build-main/mqacheck run --cases cases/quick.toml --brief --out build-main/quick-reports
