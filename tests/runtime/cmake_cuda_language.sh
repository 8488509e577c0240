#!/usr/bin/env bash
# Builds tests/runtime/cmake_project with CMake's CUDA language, as a user's project is built, and
# runs its programs on mcsim (LD_LIBRARY_PATH points at mcsim's libcuda.so.1).
# Usage: cmake_cuda_language.sh SOURCE_DIR BUILD_DIR NVCC
set -euo pipefail
src=$1 build=$2 nvcc=$3
# Under the sanitized suite LD_PRELOAD carries the sanitizer runtime for the programs (nvcc's
# binaries are not instrumented, but mcsim's libcuda.so.1 is). The compilers must not get it:
# cicc crashes with AddressSanitizer preloaded (a segmentation fault while CMake identifies the
# CUDA compiler). So CMake and the build run without it, the programs with it.
run_preload=${LD_PRELOAD:-}
unset LD_PRELOAD
rm -rf "$build"
cmake -S "$src/tests/runtime/cmake_project" -B "$build" -DCMAKE_CUDA_COMPILER="$nvcc" -DMCSIM_SOURCE_DIR="$src" \
      -DCMAKE_BUILD_TYPE=Release > "$build.log" 2>&1 || { cat "$build.log"; exit 1; }
cmake --build "$build" >> "$build.log" 2>&1 || { cat "$build.log"; exit 1; }
export LD_PRELOAD=$run_preload
[[ -n "$LD_PRELOAD" ]] || unset LD_PRELOAD
"$build/rt_api" devices malloc_copy_set async_stream_pinned events_host_functions
"$build/rt_ptx" vector_add reduction device_variable
