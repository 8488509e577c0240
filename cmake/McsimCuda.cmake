# Locates the CUDA toolkit headers (cuda.h, cudaTypedefs.h). Only headers are needed to build
# mcsim itself; the real driver is needed only for MCSIM_CONFORMANCE_REAL.
set(_mcsim_cuda_hints "${CUDAToolkit_ROOT}" "$ENV{CUDAToolkit_ROOT}" "$ENV{CUDA_HOME}" /usr/local/cuda)
find_path(MCSIM_CUDA_INCLUDE_DIR cuda.h cudaTypedefs.h
  HINTS ${_mcsim_cuda_hints} PATH_SUFFIXES include targets/x86_64-linux/include REQUIRED)
add_library(mcsim_cuda_headers INTERFACE)
target_include_directories(mcsim_cuda_headers SYSTEM INTERFACE ${MCSIM_CUDA_INCLUDE_DIR})
file(STRINGS ${MCSIM_CUDA_INCLUDE_DIR}/cuda.h _mcsim_cuda_version_line REGEX "^#define CUDA_VERSION [0-9]+")
string(REGEX MATCH "[0-9]+" MCSIM_CUDA_HEADER_VERSION "${_mcsim_cuda_version_line}")
message(STATUS "mcsim: cuda.h ${MCSIM_CUDA_INCLUDE_DIR} (CUDA_VERSION ${MCSIM_CUDA_HEADER_VERSION})")
