#!/usr/bin/env bash
# Builds the driver benchmarks in Release (in build-release, apart from the development build),
# runs them, and prints each median against its target. Extra arguments go to the benchmark
# binary (e.g. --benchmark_filter=Memcpy). Exit status: 1 when a target is missed.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${MCSIM_BENCH_BUILD_DIR:-$repo/build-release}
jobs=${MCSIM_BENCH_JOBS:-2}

cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DMCSIM_BUILD_TESTS=OFF >/dev/null
ninja -C "$build" -j"$jobs" driver_overhead_bench

results=$build/bench/driver_overhead_bench.json
"$build/bench/driver_overhead_bench" --benchmark_out="$results" --benchmark_out_format=json "$@"
echo
python3 "$repo/bench/summarize.py" "$results"
