#!/usr/bin/env bash
# The CUDA runtime's per-call figures on mcsim (docs/runtime.md, "Performance"): builds
# bench/runtime_calls.cu with nvcc (static runtime, nvcc's default) and runs it on the default
# 8-GPU node, five times; the first cudaFree(0) of each run is printed as measured.
#
# MCSIM_BUILD_DIR  build directory holding lib/libcuda.so.1 (default: build-release, built here)
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${MCSIM_BUILD_DIR:-$repo/build-release}
nvcc=${NVCC:-/usr/local/cuda/bin/nvcc}
if [[ ! -x "$nvcc" ]]; then echo "nvcc not found (set NVCC)"; exit 1; fi
if [[ -z "${MCSIM_BUILD_DIR:-}" ]]; then
  . "$repo/bench/release_build.sh"
  bench_release_build "$build" cuda >/dev/null
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$nvcc" -O2 -o "$out/runtime_calls" "$repo/bench/runtime_calls.cu"
for i in 1 2 3 4 5; do
  echo "run $i"
  LD_LIBRARY_PATH="$build/lib" "$out/runtime_calls"
done
