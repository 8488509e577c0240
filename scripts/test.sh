#!/usr/bin/env bash
# Builds mcsim (if needed) and runs the default test suite. MCSIM_SANITIZE=1 runs it under
# AddressSanitizer and UndefinedBehaviorSanitizer in a separate build directory. MCSIM_TSAN=1 runs
# the suites where threads and processes meet under ThreadSanitizer, in build-tsan
# (docs/reliability.md says which and why).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
if [[ "${MCSIM_TSAN:-0}" == 1 ]]; then
  dir=build-tsan
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMCSIM_TSAN=ON -DMCSIM_BUILD_BENCH=OFF
  # Everything but the benchmarks: the selection below reaches most test binaries.
  ninja -C "$dir"
  # Every process of the run reports into $dir/tsan.PID (the shared nodes' reports would otherwise
  # go to their logs); the first report ends the process with status 66, which fails its test.
  rm -f "$dir"/tsan.*
  export TSAN_OPTIONS="halt_on_error=1:exitcode=66:second_deadlock_stack=1:log_path=$PWD/$dir/tsan:suppressions=$PWD/scripts/tsan.supp"
  # Where threads and processes meet (docs/reliability.md says why each): handles destroyed while
  # used (embedded and shared node), multicast binds that block across threads and processes, with
  # their deadlock and hang detection, streams and events, the shared node with real processes,
  # the engine's pins and runs, two nodes in one process, and the timing suite.
  select='^(races\.|multicast\.(Blocking|Deadlock|Hang|Clients|FabricManager)|conformance\.StreamTest\.|multiprocess\.|timing\.|engine_test$|nodes_in_one_process_test$)'
  status=0
  ctest --test-dir "$dir" -j "$jobs" --output-on-failure --timeout 600 -R "$select" || status=$?
  if compgen -G "$dir/tsan.*" > /dev/null; then
    echo "ThreadSanitizer reports:"
    cat "$dir"/tsan.*
    exit 1
  fi
  exit "$status"
fi
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
