#!/usr/bin/env bash
# The shared node's load figures (docs/multiprocess.md): 8 processes x 1,000 team setup/teardown
# cycles, 72 processes on the NVL72 preset, both checked for leaks (node counts, segment use,
# descriptors back to the baseline), then the per-call cost of the shared transport against the
# embedded node (driver_overhead_bench run both ways). Uses the development build.
#
# MCSIM_BUILD_DIR  build directory (default: build)
# MCSIM_BENCH_JOBS ninja jobs (default: 2)
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${MCSIM_BUILD_DIR:-$repo/build}
jobs=${MCSIM_BENCH_JOBS:-2}
ninja -C "$build" -j"$jobs" mp_load driver_overhead_bench mcsim mcsim-node >/dev/null

echo "load average before the runs: $(cut -d' ' -f1-3 /proc/loadavg)"
"$build/tests/multiprocess/mp_load" --ranks 8 --cycles 1000
"$build/tests/multiprocess/mp_load" --ranks 72 --cycles 100 --topology gb200-nvl72

# Per-call overhead: the same driver calls, embedded and through a shared node.
dir=$(mktemp -d /tmp/mcsim-bench-XXXXXX)
trap 'MCSIM_NODE_DIR=$dir "$build/bin/mcsim" node stop --name bench >/dev/null 2>&1 || true; rm -rf "$dir"' EXIT
filter=${MCSIM_BENCH_FILTER:-PointerGetAttribute|MemCreateRelease|ReserveMapAccessUnmapFree|Memcpy}
args=(--benchmark_filter="$filter" --benchmark_repetitions=5 --benchmark_report_aggregates_only=true)
echo
echo "embedded node:"
"$build/bench/driver_overhead_bench" "${args[@]}" 2>/dev/null | grep -E "median"
MCSIM_NODE_DIR=$dir "$build/bin/mcsim" node start --name bench >/dev/null
echo
echo "shared node (MCSIM_NODE):"
MCSIM_NODE=bench MCSIM_NODE_DIR=$dir "$build/bench/driver_overhead_bench" "${args[@]}" 2>/dev/null | grep -E "median"
# The price of holding the simulation between runs (docs/multiprocess.md): calls of one process
# while another keeps the simulation busy with 64 MiB device-to-device copies.
echo
echo "shared node, beside a process copying 64 MiB device to device in a loop:"
MCSIM_NODE=bench MCSIM_NODE_DIR=$dir "$build/bench/driver_overhead_bench" --benchmark_filter='MemcpyDtoD' \
  --benchmark_min_time=1000 >/dev/null 2>&1 &
busy=$!
sleep 2
MCSIM_NODE=bench MCSIM_NODE_DIR=$dir "$build/bench/driver_overhead_bench" \
  --benchmark_filter='PointerGetAttribute|MemCreateRelease' "${args[@]:1}" 2>/dev/null | grep -E "median"
kill "$busy" 2>/dev/null || true
wait "$busy" 2>/dev/null || true
echo "load average after the runs: $(cut -d' ' -f1-3 /proc/loadavg)"
