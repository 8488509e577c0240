# Sourced by the bench scripts: configures BUILD_DIR as the benches' Release build (without the
# tests) and builds the targets named. A directory already configured otherwise (a test build, a
# sanitizer build, another build type) is refused rather than reconfigured: reconfiguring a test
# build as Release without tests would leave its test binaries stale beside a fresh libcuda.so.1,
# and ctest would then run them.
#   bench_release_build BUILD_DIR TARGET...
bench_release_build() {
  local build=$1
  shift
  local cache=$build/CMakeCache.txt
  if [[ -f "$cache" ]]; then
    local type tests
    type=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$cache")
    tests=$(sed -n 's/^MCSIM_BUILD_TESTS:[A-Z]*=//p' "$cache")
    if [[ "$type" != Release || "$tests" != OFF ]]; then
      echo "bench: $build is configured as CMAKE_BUILD_TYPE=${type:-unset} MCSIM_BUILD_TESTS=${tests:-unset};" \
           "the benches need their own Release build without tests: point MCSIM_BENCH_BUILD_DIR at another" \
           "directory (default build-release)" >&2
      exit 2
    fi
  fi
  cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DMCSIM_BUILD_TESTS=OFF >/dev/null
  if [[ $# -gt 0 ]]; then ninja -C "$build" -j"${MCSIM_BENCH_JOBS:-2}" "$@"; fi
}
