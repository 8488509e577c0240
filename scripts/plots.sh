#!/usr/bin/env bash
# Draws docs/plots/*.png: the timing model against published figures and real measurements
# (scripts/plots.py says which). Optional: needs python3-matplotlib (docs/dependencies.md).
# Builds mcsim in Release in its own directory (MCSIM_BENCH_BUILD_DIR, default build-release; a
# test build is refused: bench/release_build.sh), then runs the benches timing-only and draws.
# Pass --measure-speed to re-measure the simulation-speed plot (not reproducible: wall and CPU time).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${MCSIM_BENCH_BUILD_DIR:-$repo/build-release}
python=python3  # Debian's python3-matplotlib is for /usr/bin/python3, which another python3 may shadow
python3 -c "import matplotlib" 2>/dev/null || python=/usr/bin/python3
"$python" -c "import matplotlib" 2>/dev/null || {
  echo "scripts/plots.sh needs matplotlib: apt-get install -y python3-matplotlib" >&2; exit 1; }
. "$repo/bench/release_build.sh"
bench_release_build "$build" mcsim mcsim_bench_allreduce copy_bandwidth >/dev/null
exec "$python" "$repo/scripts/plots.py" "$build" "$@"
