#!/usr/bin/env bash
# Builds mcsim (if needed) and runs the default test suite. MCSIM_SANITIZE=1 runs it under
# AddressSanitizer and UndefinedBehaviorSanitizer in a separate build directory.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
if [[ "${MCSIM_SANITIZE:-0}" == 1 ]]; then
  dir=build-asan
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DMCSIM_SANITIZE=ON -DMCSIM_BUILD_BENCH=OFF
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  export LSAN_OPTIONS=suppressions=$PWD/scripts/lsan.supp
else
  dir=build
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
fi
ninja -C "$dir"
ctest --test-dir "$dir" -j "$jobs" --output-on-failure --timeout 300
