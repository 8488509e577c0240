#!/usr/bin/env bash
# Simulation speed of the copy model (docs/model.md, "Simulation speed"): builds Release in
# build-release, runs each scenario in a process of its own, prints one table.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${MCSIM_BENCH_BUILD_DIR:-$repo/build-release}
. "$repo/bench/release_build.sh"
bench_release_build "$build" sim_speed >/dev/null
bin=$build/bench/sim_speed
GiB=$((1 << 30)); MiB=$((1 << 20))
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-16s %-12s %-11s %5s %12s %9s %13s %17s %11s %12s %8s\n' scenario preset mode gpus bytes wall_s simulated_us sim_GB_per_wall_s timed_waits waits_per_s rss_MiB
run() {  # preset mode scenario bytes
  local env=() line
  [[ $2 == timing-only ]] && env+=(MCSIM_TIMING_ONLY=1)
  local preset=$1 mode=$2
  while read -r line; do
    set -- $line
    printf '%-16s %-12s %-11s %5s %12s %9s %13s %17s %11s %12s %8s\n' "$1" "$preset" "$mode" "$2" "$3" "$4" "$5" "$6" "$7" "$8" "$9"
  done < <(env "${env[@]}" MCSIM_TOPOLOGY="$preset" "$bin" "$3" "$4")
}
run hgx-h100 timing-only peer $GiB
run hgx-h100 functional peer $GiB
run hgx-h100 timing-only alltoall $GiB
run hgx-h100 timing-only alltoall $((4 * GiB))
run hgx-h100 functional alltoall $((256 * MiB))
run gb200-nvl72 timing-only alltoall $GiB
while read -r line; do
  set -- $line
  printf '%-16s %-12s %-11s %5s %12s %9s %13s %17s %11s %12s %8s\n' "$1" host functional - "$3" "$4" - "$6" - - "$9"
done < <("$bin" memcpy $GiB)
