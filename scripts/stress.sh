#!/usr/bin/env bash
# The shared node under chaos, for as long as asked (not part of the default suite, which runs a
# 20-second version as multiprocess.stress_short):
#
#   scripts/stress.sh [SECONDS] [PROCESSES] [SEED] [mp_stress options...]
#
# builds mp_stress (tests/multiprocess/mp_stress.cpp) and what it needs in the development build,
# and runs it nice'd: PROCESSES worker processes (default 8) doing random driver work on a node of
# their own, killed with SIGKILL at random moments and replaced, for SECONDS (default 1800), every
# choice drawn from SEED (default 1); a keeper process's memory must not change, no call may hang
# past the grace period, and afterwards a fresh process must be served and the node's counts,
# segment use and descriptors must be back where they were. Prints the kills survived and the
# work done; exit status 0 only when nothing failed (docs/reliability.md, "Killed clients").
#
# MCSIM_BUILD_DIR  build directory (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-1800}
processes=${2:-8}
seed=${3:-1}
shift $(( $# < 3 ? $# : 3 ))
build=${MCSIM_BUILD_DIR:-build}
nice ninja -C "$build" -j2 mp_stress mp_rank mcsim mcsim-node >/dev/null
exec nice "$build/tests/multiprocess/mp_stress" --seconds "$seconds" --processes "$processes" --seed "$seed" "$@"
