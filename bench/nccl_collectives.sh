#!/usr/bin/env bash
# NCCL's collectives on the simulated node (docs/nccl.md, "Running NCCL's collectives"): the
# toolkit's libnccl.so.2 runs its own kernels from its linked PTX. For each protocol
# (MCSIM_BENCH_NCCL_PROTOS, default "LL Simple"; LL128 too), 2 and 8 GPUs and 4 KiB and 1 MiB a rank, all-reduce, all-gather, reduce-scatter and broadcast on one set of communicators:
# the program's wall and CPU time (NCCL's set-up included) and each collective's simulated time on
# rank 0's stream. Uses the test build's tests/nccl/nccl_allreduce (MCSIM_BENCH_BUILD_DIR, default
# build), built where nvcc and NCCL are found.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${MCSIM_BENCH_BUILD_DIR:-$repo/build}
ninja -C "$build" -j"${MCSIM_BENCH_JOBS:-2}" mcsim cuda nccl_allreduce_program >/dev/null
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
for proto in ${MCSIM_BENCH_NCCL_PROTOS:-LL Simple}; do
  for gpus in 2 8; do
    for count in 1024 262144; do
      out=$( { /usr/bin/time -f "wall %e s, cpu %U s" env NCCL_NVLS_ENABLE=0 NCCL_PROTO="$proto" \
               "$build/bin/mcsim" run -- "$build/tests/nccl/nccl_allreduce" "$gpus" "$count" all; } 2>&1)
      echo "== $proto, $gpus GPUs, $count floats a rank: $(echo "$out" | grep '^wall')"
      echo "$out" | grep '^nccl_allreduce' || echo "$out" | tail -5
    done
  done
done
