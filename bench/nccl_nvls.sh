#!/usr/bin/env bash
# NCCL's NVLS all-reduce on the 8 GPUs of hgx-h100 (docs/nccl.md, "NVLS"), timed as nccl-tests
# times it: for each size (MCSIM_BENCH_NVLS_SIZES, in bytes a rank, default 1 MiB, 16 MiB and
# 64 MiB) one program runs ncclAllReduce (f32, sum, NCCL_ALGO=NVLS; MCSIM_BENCH_NVLS_ALGO=Ring for
# the ring, with NVLS off) MCSIM_BENCH_NVLS_REPEAT times (default 2: the first includes NCCL's NVLS
# buffer set-up, done at its first collective), each run MCSIM_BENCH_NVLS_BATCH collectives back
# to back (default 3), events on rank 0's stream around all but the first, their mean reported,
# every element checked: the figure nccl-tests' mean over many iterations approaches, in which the
# host's launch work for 8 GPUs (tens of microseconds of the host's clock, docs/model.md)
# overlaps the GPUs' work. Prints the program's wall, user
# and system CPU time, its peak memory, each run's simulated time, and the last run's algorithm
# and bus bandwidth (busbw = 2 (n-1)/n x bytes / time, nccl-tests' definition). For one size
# with the timeline summary (simulated time per kernel, link and switch), set
# MCSIM_BENCH_NVLS_SUMMARY=1. Uses the test build's tests/nccl/nccl_allreduce (MCSIM_BENCH_BUILD_DIR,
# default build), built where nvcc and NCCL are found.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${MCSIM_BENCH_BUILD_DIR:-$repo/build}
ninja -C "$build" -j"${MCSIM_BENCH_JOBS:-2}" mcsim cuda nvidia-ml nccl_allreduce_program >/dev/null
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
repeat=${MCSIM_BENCH_NVLS_REPEAT:-2}
batch=${MCSIM_BENCH_NVLS_BATCH:-3}
algo=${MCSIM_BENCH_NVLS_ALGO:-NVLS}
nvls=1
if [ "$algo" != NVLS ]; then nvls=0; fi
summary=()
if [ "${MCSIM_BENCH_NVLS_SUMMARY:-0}" = 1 ]; then summary=(--timeline-summary); fi
for bytes in ${MCSIM_BENCH_NVLS_SIZES:-1048576 16777216 67108864}; do
  count=$((bytes / 4))
  out=$( { /usr/bin/time -f "wall %e s, user %U s, sys %S s, peak %M KiB" env NCCL_ALGO="$algo" NCCL_NVLS_ENABLE=$nvls \
           "$build/bin/mcsim" run "${summary[@]}" -- "$build/tests/nccl/nccl_allreduce" 8 "$count" allreduce f32 sum \
           "$repeat" "$batch"; } 2>&1)
  echo "== $algo all-reduce, 8 GPUs, $bytes bytes a rank, $batch back to back: $(echo "$out" | grep '^wall')"
  echo "$out" | grep '^nccl_allreduce' || echo "$out" | tail -5
  last=$(echo "$out" | grep '^nccl_allreduce' | tail -1 | sed -n 's/.*rank 0: \([0-9.]*\) us.*/\1/p')
  if [ -n "$last" ]; then
    awk -v b="$bytes" -v t="$last" 'BEGIN { printf "   last run: %.1f us, algbw %.1f GB/s, busbw %.1f GB/s\n", t, b / t / 1e3, 2 * 7 / 8 * b / t / 1e3 }'
  fi
  if [ ${#summary[@]} -ne 0 ]; then echo "$out" | grep -v '^nccl_allreduce\|^wall' | tail -60; fi
done
