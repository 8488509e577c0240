#!/usr/bin/env bash
# The library's multimem all-reduces from their PTX (MCSIM_LIBRARY_KERNELS=ptx: the executor runs
# them, multimem instructions included) against their behavioural models: simulated time of each
# (`mcsim bench allreduce`, 8x H100, f32, two timed iterations) and the ratio PTX / model, from
# 512 KiB to 32 MiB (docs/ptx.md, "multimem"). Builds Release in build-release unless
# MCSIM_BENCH_BUILD_DIR says otherwise, or measures the `mcsim` given as its argument.
# MCSIM_PTX_RATIO_SIZES and MCSIM_PTX_RATIO_ALGOS override the sizes and algorithms (the larger
# sizes, to 1 GiB, take minutes and 8 x 2 x size of host memory).
#
#   bench/multimem_ptx_ratio.sh [MCSIM]
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [[ $# -gt 0 ]]; then
  mcsim=$1
else
  build=${MCSIM_BENCH_BUILD_DIR:-$repo/build-release}
  . "$repo/bench/release_build.sh"
  bench_release_build "$build" mcsim mcsim_bench_allreduce cuda >/dev/null
  mcsim=$build/bin/mcsim
fi
sizes=${MCSIM_PTX_RATIO_SIZES:-512K,2M,8M,32M}
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-8s %10s %12s %10s %8s %11s\n' algo bytes model_us ptx_us ratio ptx_wall_s
for algo in ${MCSIM_PTX_RATIO_ALGOS:-twoshot oneshot nvls}; do
  model=$("$mcsim" bench allreduce --format plain --algo "$algo" --sizes "$sizes" --iters 2 | grep -v '^#' | tail -n +2)
  start=$(date +%s.%N)
  ptx=$(MCSIM_LIBRARY_KERNELS=ptx "$mcsim" bench allreduce --format plain --algo "$algo" --sizes "$sizes" --iters 2 | grep -v '^#' | tail -n +2)
  wall=$(echo "$(date +%s.%N) - $start" | bc)
  paste <(echo "$model") <(echo "$ptx") | while read -r bytes mt _ _ _ pt _ _; do
    printf '%-8s %10s %12s %10s %8.3f %11.2f\n' "$algo" "$bytes" "$mt" "$pt" "$(echo "$pt / $mt" | bc -l)" "$wall"
  done
done
