#!/usr/bin/env bash
# Builds mcsim in Release and compares its multimem model with the published 8x H100 figures
# (bench/calibrate_multimem.py; the plot needs python3-matplotlib).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${MCSIM_BENCH_BUILD_DIR:-$repo/build-release}
cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DMCSIM_BUILD_TESTS=OFF >/dev/null
ninja -C "$build" -j"${MCSIM_BENCH_JOBS:-2}" mcsim mcsim_bench_allreduce cuda >/dev/null
python=python3
python3 -c "import matplotlib" 2>/dev/null || { [[ -x /usr/bin/python3 ]] && python=/usr/bin/python3; }
exec "$python" "$repo/bench/calibrate_multimem.py" "$build/bin/mcsim"
