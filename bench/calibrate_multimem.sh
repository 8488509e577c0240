#!/usr/bin/env bash
# Builds mcsim in Release and compares its multimem model with the published 8x H100 figures
# (bench/calibrate_multimem.py; the plot needs python3-matplotlib).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${MCSIM_BENCH_BUILD_DIR:-$repo/build-release}
. "$repo/bench/release_build.sh"
bench_release_build "$build" mcsim mcsim_bench_allreduce cuda >/dev/null
python=python3
python3 -c "import matplotlib" 2>/dev/null || { [[ -x /usr/bin/python3 ]] && python=/usr/bin/python3; }
exec "$python" "$repo/bench/calibrate_multimem.py" "$build/bin/mcsim"
