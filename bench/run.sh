#!/usr/bin/env bash
# Builds the driver benchmarks in Release (in build-release, apart from the development build),
# runs every benchmark binary one after the other, and prints one table of medians against their
# targets (docs/benchmarks.md). Extra arguments go to every benchmark binary (e.g.
# --benchmark_filter=Multicast; a binary with no matching benchmark just reports nothing).
# Exit status: 1 when a target is missed.
#
# MCSIM_BENCH_BUILD_DIR  build directory (default: build-release)
# MCSIM_BENCH_JOBS       ninja jobs (default: 2)
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${MCSIM_BENCH_BUILD_DIR:-$repo/build-release}
jobs=${MCSIM_BENCH_JOBS:-2}
benches=(driver_overhead_bench multicast_bench)

. "$repo/bench/release_build.sh"
bench_release_build "$build" "${benches[@]}"

echo "load average before the runs: $(cut -d' ' -f1-3 /proc/loadavg)"
results=()
for bench in "${benches[@]}"; do
  out=$build/bench/$bench.json
  rm -f "$out"  # never summarize a previous run's figures
  echo
  "$build/bench/$bench" --benchmark_out="$out" --benchmark_out_format=json "$@"
  [[ -s $out ]] && results+=("$out")
done
echo
if [[ ${#results[@]} -eq 0 ]]; then
  echo "no benchmark results were written" >&2
  exit 1
fi
python3 "$repo/bench/summarize.py" "${results[@]}"
