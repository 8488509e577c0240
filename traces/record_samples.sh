#!/usr/bin/env bash
# Records the sample traces of traces/samples/ in mcsim (docs/traces.md, "Sample traces"). Run
# after a change to the driver that changes what a sample records (a new result, a timing model):
#   traces/record_samples.sh [BUILD_DIR]
# The real-GPU samples (*.real.jsonl) are recorded on a GPU machine instead; see docs/traces.md,
# "Validation on a real GPU".
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
mcsim=$build/bin/mcsim
out=traces/samples
mkdir -p "$out/faults"
# Fixed settings, so that a re-recording differs only where the driver changed.
export MCSIM_SEED=1
# Hangs are reported after 1 s rather than 10, so that replaying the samples stays quick.
export MCSIM_HANG_GRACE_S=1
unset MCSIM_TOPOLOGY MCSIM_FAULTS MCSIM_FAULTS_FILE MCSIM_RECORD_DATA MCSIM_RECORD_OUTPUT_DATA MCSIM_RECORD_IMAGES

# The NCCL-style setup followed by its multimem all-reduce (kernel launches over the multicast mapping).
"$mcsim" run --record "$out/nccl-8gpu-setup.jsonl" -- "$build/bin/mcsim_workload_nccl" --allreduce >/dev/null
"$mcsim" run --record "$out/pytorch-setup.jsonl" -- "$build/bin/mcsim_workload_pytorch" >/dev/null
"$mcsim" run --topology single-h100 --record "$out/vmm-copies.sim.jsonl" -- "$build/bin/mcsim_sample_vmm_copies" >/dev/null
"$mcsim" run --topology single-h100 --record "$out/kernel-launches.sim.jsonl" -- "$build/bin/mcsim_sample_kernel_launches" >/dev/null
# Every field failure of examples/faults, in the NCCL-style workload that meets most of them.
for plan in examples/faults/*.plan; do
  name=$(basename "$plan" .plan)
  "$mcsim" run --faults "$plan" --record "$out/faults/$name.jsonl" -- "$build/bin/mcsim_workload_nccl" --allreduce >/dev/null 2>&1 || true
done
for t in "$out"/*.jsonl "$out"/faults/*.jsonl; do
  printf '%-52s %5d calls\n' "$t" "$(($(wc -l <"$t") - 2))"
done
