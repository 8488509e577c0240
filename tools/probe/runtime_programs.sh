#!/usr/bin/env bash
# Runs the CUDA runtime programs of tests/runtime, as the build made them with nvcc, against the
# REAL driver on a GPU machine (docs/real-driver.md), so that their answers can be compared with
# mcsim's (ctest -L runtime). Every program prints "ok CASE" or "FAIL CASE: why" per case.
#   tools/probe/runtime_programs.sh BUILD_DIR > runtime-programs.txt
# Never runs rt_multimem (it makes multicast objects: no cuMulticast* call on a real GPU, ever) nor
# rt_ptx_spin's never_finishes (it would hang the GPU until the watchdog). The IPC programs start
# a child process that opens the parent's handles on the same GPU(s).
set -u
build=${1:?usage: runtime_programs.sh BUILD_DIR}
dir=$build/tests/runtime
# The real driver, not mcsim's: nothing of the build on the library path.
unset LD_LIBRARY_PATH MCSIM_NODE
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
run() {
  local name=$1
  shift
  if [[ ! -x $dir/$name ]]; then
    echo "== $name: not built"
    return
  fi
  echo "== $name $*"
  "$dir/$name" "$@" 2>&1
  echo "rc=$?"
}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | sed 's/^/# GPU: /'
for p in rt_api_static rt_api_shared rt_kernels_static rt_kernels_shared rt_ipc_static rt_ipc_shared rt_ptx_shared \
         rt_graphs_static rt_graphs_shared rt_ptx_static rt_ptx_sass_only rt_printf rt_assert rt_const; do
  run "$p"
done
run rt_ptx_newer_ptx vector_add reduction
run rt_ptx_newer_ptx_only vector_add
run rt_ptx_spin grid_barrier cas_lock cross_gpu chain
# Separate compilation: SASS and PTX, and PTX only (the driver JIT-links the relocatable objects).
run rt_rdc
run rt_rdc_ptx
# Mapped pinned memory and registered host memory reached by kernels (cudaHostRegister).
run rt_host_mapped
# Every field of cudaGetDeviceProperties for device 0, to diff against mcsim's preset of the same
# GPU (tests/runtime/device_properties_match.sh does so for the H100 record).
run device_properties
# Runtimes of other CUDA versions, where the build found some (tests/runtime/fetch_other_runtimes.sh).
other=$(find "$build" -name rt_other_runtime -type f -perm -u+x | head -n 1)
if [[ -n $other ]]; then
  for lib in /usr/local/cuda/lib64/libcudart.so.13 "$build"/other-cudart/libcudart.so.*; do
    [[ -e $lib ]] || continue
    echo "== rt_other_runtime $lib"
    "$other" "$lib" 2>&1
    echo "rc=$?"
  done
fi
