#!/usr/bin/env bash
# The long fault campaign (not part of the default test suite, which runs 200 seeds):
#
#   scripts/campaign.sh [SEEDS] [mcsim campaign options...]
#
# runs SEEDS seeds (default 10000; each runs every sample workload under a random fault plan, see
# docs/faults.md) in chunks of 1000, so that failures show up as the campaign goes. Every chunk
# checks reproducibility, and coverage when it has 200 seeds or more; the failing runs'
# reproduction commands are printed and collected in the log. Exit status 0 only when no chunk
# found a violation.
#
# Settings: MCSIM_BUILD_DIR (default build; configured and built when it has no mcsim yet),
# MCSIM_CAMPAIGN_FIRST_SEED (default 0), MCSIM_CAMPAIGN_CHUNK (default 1000).
# About 5 minutes per 1000 seeds on two cores.
set -euo pipefail
cd "$(dirname "$0")/.."
seeds=${1:-10000}
[[ $# -gt 0 ]] && shift
if ! [[ "$seeds" =~ ^[1-9][0-9]*$ ]]; then
  echo "usage: scripts/campaign.sh [SEEDS] [mcsim campaign options...]" >&2
  exit 2
fi
dir=${MCSIM_BUILD_DIR:-build}
first=${MCSIM_CAMPAIGN_FIRST_SEED:-0}
chunk=${MCSIM_CAMPAIGN_CHUNK:-1000}
if [[ ! -f "$dir/build.ninja" ]]; then
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
fi
ninja -C "$dir" mcsim

log="$dir/campaign-$first-$seeds.log"
: > "$log"
runs=0
violations=0
failed_chunks=0
done_seeds=0
while (( done_seeds < seeds )); do
  n=$(( seeds - done_seeds < chunk ? seeds - done_seeds : chunk ))
  from=$(( first + done_seeds ))
  echo "== seeds $from to $(( from + n - 1 ))" | tee -a "$log"
  # Coverage is required of chunks of 200 seeds or more (the default suite's campaign size).
  coverage=()
  (( n >= 200 )) && coverage=(--require-coverage)
  status=0
  out=$("$dir/bin/mcsim" campaign --seeds "$n" --first-seed "$from" "${coverage[@]}" "$@") || status=$?
  echo "$out" | tee -a "$log"
  summary=$(echo "$out" | grep -E '^[0-9]+ runs, [0-9]+ invariant violations$' || true)
  if [[ -z "$summary" ]]; then
    echo "campaign.sh: the chunk gave no summary (exit status $status)" | tee -a "$log" >&2
    exit 1
  fi
  runs=$(( runs + $(echo "$summary" | cut -d' ' -f1) ))
  violations=$(( violations + $(echo "$summary" | cut -d' ' -f3) ))
  (( status != 0 )) && failed_chunks=$(( failed_chunks + 1 ))
  done_seeds=$(( done_seeds + n ))
done
echo "== $seeds seeds from $first: $failed_chunks failing chunk(s); log: $log" | tee -a "$log"
echo "$runs runs, $violations invariant violations" | tee -a "$log"
(( violations == 0 && failed_chunks == 0 ))
