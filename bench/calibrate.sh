#!/usr/bin/env bash
# Builds the copy probe in Release against mcsim and compares the model with real measurements
# (bench/calibrate.py). Plots need python3-matplotlib (optional: docs/dependencies.md).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${MCSIM_BENCH_BUILD_DIR:-$repo/build-release}
. "$repo/bench/release_build.sh"
bench_release_build "$build" copy_bandwidth >/dev/null
python=python3
python3 -c "import matplotlib" 2>/dev/null || { [[ -x /usr/bin/python3 ]] && python=/usr/bin/python3; }
exec "$python" "$repo/bench/calibrate.py" "$build"
