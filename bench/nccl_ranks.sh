#!/usr/bin/env bash
# NCCL with one process a GPU on a shared node (docs/nccl.md, "Several processes"): for each
# process count (MCSIM_BENCH_NCCL_RANKS, default "8") and size (MCSIM_BENCH_NCCL_COUNTS, floats a
# rank, default "1024 262144"), tests/nccl/nccl_ranks starts that many processes, each
# ncclCommInitRank on its GPU, and runs all-reduce, all-gather, reduce-scatter and broadcast,
# every element checked. NCCL_NVLS_ENABLE=0 unless MCSIM_BENCH_NCCL_NVLS=1; NCCL_PROTO from
# MCSIM_BENCH_NCCL_PROTO when set. Prints the wall and CPU time of the processes (NCCL's set-up
# included) and the CPU time of the node process, which runs the kernels. Uses the test build
# (MCSIM_BENCH_BUILD_DIR, default build), built where nvcc and NCCL are found.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${MCSIM_BENCH_BUILD_DIR:-$repo/build}
ninja -C "$build" -j"${MCSIM_BENCH_JOBS:-2}" mcsim cuda nccl_ranks_program >/dev/null
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
dir=$(mktemp -d /tmp/mcsim-bench-XXXXXX)
chmod 700 "$dir"
trap 'rm -rf "$dir"' EXIT
export MCSIM_NODE_DIR=$dir LD_LIBRARY_PATH=$build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
nvls=$([ "${MCSIM_BENCH_NCCL_NVLS:-0}" = 1 ] && echo 1 || echo 0)
proto=()
[ -n "${MCSIM_BENCH_NCCL_PROTO:-}" ] && proto=(NCCL_PROTO="$MCSIM_BENCH_NCCL_PROTO")
for ranks in ${MCSIM_BENCH_NCCL_RANKS:-8}; do
  for count in ${MCSIM_BENCH_NCCL_COUNTS:-1024 262144}; do
    name=bench$$-$ranks-$count
    "$build/bin/mcsim" node start --name "$name" --exit-with $$ --processes "$ranks" >/dev/null
    pid=$(cat "$dir/$name.lock")
    out=$( { /usr/bin/time -f "wall %e s, cpu %U s user + %S s system" env NCCL_NVLS_ENABLE="$nvls" "${proto[@]}" \
             MCSIM_NODE="$name" "$build/tests/nccl/nccl_ranks" "$ranks" "$count"; } 2>&1) || true
    node=$(awk -v t="$(getconf CLK_TCK)" '{printf "node cpu %.1f s user + %.1f s system", $14/t, $15/t}' "/proc/$pid/stat")
    "$build/bin/mcsim" node stop --name "$name" >/dev/null
    echo "== $ranks processes, $count floats a rank, NVLS $nvls${MCSIM_BENCH_NCCL_PROTO:+, $MCSIM_BENCH_NCCL_PROTO}: $(echo "$out" | grep '^wall'); $node"
    echo "$out" | grep -E '^nccl_ranks: [0-9]+ processes' || echo "$out" | grep -v '^wall' | tail -5
  done
done
