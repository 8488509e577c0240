#!/usr/bin/env bash
# The real-GPU validation of docs/traces.md, run on a machine with one real GPU and the CUDA
# toolkit (no SystemC needed):
#   traces/real_gpu_validation.sh            # results in $OUT (default /tmp/mcsim-traces-real)
# It builds the trace tools alone (-DMCSIM_TRACES_REAL=ON; nlohmann/json and CLI11 headers from
# the system or .device/include), records the two non-multicast samples on the real GPU (VMM
# copies; kernel-library launches on plain memory), replays each there, replays mcsim's recording
# of each there, and compares. It never replays a trace with cuMulticast* calls and never sets
# MCSIM_REAL_MULTICAST, so no multicast call reaches the GPU (the recording library refuses them
# anyway). Back home:
#   mcsim replay $OUT/vmm-copies.real.jsonl --topology single-h100        (real -> mcsim)
#   mcsim replay $OUT/kernel-launches.real.jsonl --topology single-h100   (real -> mcsim)
#   mcsim diff traces/samples/kernel-launches.sim.jsonl $OUT/kernel-launches.real.jsonl
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
unset MCSIM_REAL_MULTICAST MCSIM_RECORD
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/mcsim-traces-real}
mkdir -p "$out"
build=build-real
{
  date -u
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  echo "real drivers: $(ls /usr/lib/x86_64-linux-gnu/libcuda.so.1 /usr/lib64/libcuda.so.1 /usr/local/nvidia/lib64/libcuda.so.1 2>/dev/null | tr '\n' ' ')"
  if ! { cmake -S . -B $build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMCSIM_TRACES_REAL=ON \
           -DMCSIM_EXTRA_INCLUDE="$PWD/.device/include" -DMCSIM_WERROR=OFF >"$out/build.log" 2>&1 &&
         ninja -C $build >>"$out/build.log" 2>&1; }; then
    echo "build failed:"; tail -30 "$out/build.log"; exit 1
  fi
  B=$build/bin
  echo "== 1. record the non-multicast sample on the real GPU"
  # The recording library's directory first: a machine's LD_LIBRARY_PATH often names the real
  # driver's, which the loader searches before the program's RUNPATH (the 2026-11-21 run lost
  # its direct recording that way).
  MCSIM_RECORD="$out/vmm-copies.real.jsonl" LD_LIBRARY_PATH="$PWD/$build/lib/record-real${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    $B/mcsim_sample_vmm_copies; echo "exit $?"
  echo "== 2. replay the real recording on the real GPU (real -> real)"
  $B/mcsim replay "$out/vmm-copies.real.jsonl" --target real --explain 10 -o "$out/vmm-copies.real-replay.jsonl"; echo "exit $?"
  echo "== 3. replay mcsim's recording on the real GPU (mcsim -> real)"
  $B/mcsim replay traces/samples/vmm-copies.sim.jsonl --target real --explain 10 -o "$out/vmm-copies.sim-on-real.jsonl"; echo "exit $?"
  echo "== 4. mcsim's recording vs the real one"
  $B/mcsim diff traces/samples/vmm-copies.sim.jsonl "$out/vmm-copies.real.jsonl" --explain 10; echo "exit $?"
  echo "== 5. the real recording vs its replay on the real GPU"
  $B/mcsim diff "$out/vmm-copies.real.jsonl" "$out/vmm-copies.real-replay.jsonl" --explain 10; echo "exit $?"
  echo "== 6. record the kernel-library launch sample on the real GPU (one device, plain memory)"
  MCSIM_RECORD="$out/kernel-launches.real.jsonl" LD_LIBRARY_PATH="$PWD/$build/lib/record-real${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    $B/mcsim_sample_kernel_launches; echo "exit $?"
  echo "== 7. replay it on the real GPU (real -> real)"
  $B/mcsim replay "$out/kernel-launches.real.jsonl" --target real --explain 10 -o "$out/kernel-launches.real-replay.jsonl"; echo "exit $?"
  echo "== 8. replay mcsim's recording of it on the real GPU (mcsim -> real)"
  $B/mcsim replay traces/samples/kernel-launches.sim.jsonl --target real --explain 10 -o "$out/kernel-launches.sim-on-real.jsonl"; echo "exit $?"
  echo "== 9. mcsim's recording vs the real one (launches compared by kernel and parameter values)"
  $B/mcsim diff traces/samples/kernel-launches.sim.jsonl "$out/kernel-launches.real.jsonl" --explain 10; echo "exit $?"
} 2>&1 | tee "$out/traces-real.txt"
