#!/usr/bin/env bash
# Simulation speed of the multicast model at rack scale (docs/benchmarks.md, "Simulation speed
# of the all-reduce"): wall and CPU time of `mcsim bench allreduce --algo nvls --timing-only` on
# gb200-nvl72 against the number of GPUs and the size.
#
#   bench/allreduce_speed.sh                  build Release in build-release and measure it
#   bench/allreduce_speed.sh MCSIM [MCSIM...]  measure these `mcsim` commands, one after the
#                                             other for each row, so that their ratio is taken
#                                             under the same load
# MCSIM_SPEED_GPUS and MCSIM_SPEED_SIZES override the lists below.
#
# Each run is one process: set-up, one warm-up and one timed all-reduce (--iters 1), so the
# figures per all-reduce (wall / 2, cpu / 2) include half the set-up. cpu is user + system time,
# steadier than wall time on a shared machine.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [[ $# -eq 0 ]]; then
  build=${MCSIM_BENCH_BUILD_DIR:-$repo/build-release}
  . "$repo/bench/release_build.sh"
  bench_release_build "$build" mcsim mcsim_bench_allreduce cuda >/dev/null
  set -- "$build/bin/mcsim"
fi
gpus=${MCSIM_SPEED_GPUS:-8 16 36 72}
sizes=${MCSIM_SPEED_SIZES:-64M 256M 1G}
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
i=0
for mcsim in "$@"; do echo "mcsim $i: $mcsim"; i=$((i + 1)); done
printf '%-6s %-6s %-5s %12s %10s %20s %20s\n' gpus size mcsim simulated_us busbw wall_s_per_allreduce cpu_s_per_allreduce
for n in $gpus; do
  for s in $sizes; do
    i=0
    for mcsim in "$@"; do
      # The plain table (builds from before 2026-11-29 print nothing else and know no --format).
      plain=()
      "$mcsim" bench allreduce --help 2>/dev/null | grep -q -- --format && plain=(--format plain)
      out=$( { /usr/bin/time -f 'TIME %e %U %S' "$mcsim" bench allreduce "${plain[@]}" --topology gb200-nvl72 --gpus "$n" \
               --algo nvls --sizes "$s" --iters 1 --timing-only; } 2>&1)
      row=$(grep -E '^[0-9]+ ' <<<"$out" | tail -1)
      read -r _ wall user sys < <(grep '^TIME' <<<"$out")
      printf '%-6s %-6s %-5s %12s %10s %20.2f %20.2f\n' "$n" "$s" "$i" "$(cut -d' ' -f2 <<<"$row")" \
        "$(cut -d' ' -f4 <<<"$row")" "$(bc -l <<<"$wall / 2")" "$(bc -l <<<"($user + $sys) / 2")"
      i=$((i + 1))
    done
  done
done
