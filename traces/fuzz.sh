#!/usr/bin/env bash
# The trace reader's long fuzzing campaign (not part of the default test suite):
#
#   traces/fuzz.sh [SECONDS] [libFuzzer options...]
#
# builds traces/fuzz/trace_parser_fuzzer with clang, ASan and UBSan in build-fuzz/ (only that
# target and what it needs), seeds the corpus with traces/fuzz/corpus (launches in every form,
# images, options, handle arrays), the head of the NCCL-style sample and the good and bad traces
# of tests/traces, and fuzzes for SECONDS (default 600) on one core. Crashes land in
# build-fuzz/fuzz-artifacts/; exit status 0 only when the fuzzer found nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-600}
[[ $# -gt 0 ]] && shift
dir=${MCSIM_FUZZ_BUILD_DIR:-build-fuzz}
if [[ ! -f "$dir/build.ninja" ]]; then
  CC=clang CXX=clang++ cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMCSIM_BUILD_FUZZERS=ON \
    -DMCSIM_BUILD_TESTS=OFF -DMCSIM_BUILD_BENCH=OFF
fi
ninja -C "$dir" trace_parser_fuzzer
corpus=$dir/fuzz-corpus
mkdir -p "$corpus" "$dir/fuzz-artifacts"
# Small seeds only: libFuzzer's inputs are capped at -max_len bytes.
cp tests/traces/good.jsonl tests/traces/bad/*.jsonl traces/fuzz/corpus/*.jsonl "$corpus/"
head -c 4000 traces/samples/nccl-8gpu-setup.jsonl >"$corpus/nccl-head.jsonl"
exec "$dir/traces/trace_parser_fuzzer" "$corpus" -max_len=8192 -max_total_time="$seconds" \
  -artifact_prefix="$dir/fuzz-artifacts/" -print_final_stats=1 "$@"
