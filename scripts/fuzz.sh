#!/usr/bin/env bash
# Every libFuzzer target, each for SECONDS (not part of the default suite):
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]
#
# builds the targets with clang, ASan and UBSan in build-fuzz/ (only they and what they need),
# and fuzzes each in turn for SECONDS (default 600) on one core, nice'd: the trace reader
# (traces/fuzz), presets, fault plans, module images, the shared node's wire messages and replay
# semantics (fuzz/; the replay fuzzer replays each trace end to end against this build's
# instrumented libcuda.so.1, in a child process, and may take up to 5 s plus 2 s a call for one).
# Each starts from its committed corpus (fuzz/corpus/NAME/; the trace reader's seeds as
# traces/fuzz.sh gathers them) copied into build-fuzz/fuzz-corpus/NAME/, where what it finds
# new stays for the next run; crashes land in build-fuzz/fuzz-artifacts/NAME/. The last line of
# each run (executions, coverage) is printed; exit status 0 only when no target found anything.
set -uo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-600}
[[ $# -gt 0 ]] && shift
targets=("$@")
[[ ${#targets[@]} -eq 0 ]] && targets=(trace_parser preset fault_plan module_image node_wire replay)
dir=${MCSIM_FUZZ_BUILD_DIR:-build-fuzz}
if [[ ! -f "$dir/build.ninja" ]]; then
  CC=clang CXX=clang++ cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMCSIM_BUILD_FUZZERS=ON \
    -DMCSIM_BUILD_TESTS=OFF -DMCSIM_BUILD_BENCH=OFF >/dev/null || exit 2
fi
nice ninja -C "$dir" "${targets[@]/%/_fuzzer}" || exit 2
status=0
for t in "${targets[@]}"; do
  corpus=$dir/fuzz-corpus/$t
  artifacts=$dir/fuzz-artifacts/$t
  mkdir -p "$corpus" "$artifacts"
  if [[ $t == trace_parser ]]; then
    exe=$dir/traces/trace_parser_fuzzer
    cp tests/traces/good.jsonl tests/traces/bad/*.jsonl traces/fuzz/corpus/*.jsonl "$corpus/"
    head -c 4000 traces/samples/nccl-8gpu-setup.jsonl >"$corpus/nccl-head.jsonl"
  else
    exe=$dir/fuzz/${t}_fuzzer
    cp fuzz/corpus/"$t"/* "$corpus/"
  fi
  log=$dir/fuzz-$t.log
  # A replay's own limits (replay_fuzzer.cpp) end a hung one; libFuzzer's only bounds the others.
  timeout=10
  [[ $t == replay ]] && timeout=900
  # -rss_limit_mb: an input that makes a reader take memory out of proportion is a finding too.
  started=$SECONDS
  nice "$exe" "$corpus" -max_len=16384 -max_total_time="$seconds" -rss_limit_mb=2048 -timeout="$timeout" \
    -artifact_prefix="$artifacts/" -print_final_stats=1 >"$log" 2>&1
  rc=$?
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$')
  found=$(find "$artifacts" -type f | wc -l)
  echo "$t: ${runs:-?} executions in $((SECONDS - started)) s (of ${seconds}), exit $rc, $found findings ($log)"
  [[ $rc -ne 0 || $found -ne 0 ]] && status=1
done
exit "$status"
