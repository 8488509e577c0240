# `cmake --install <build> --prefix P`: mcsim for users' own tests (README, docs/user-guide.md).
#
#   P/bin/                      mcsim, mcsim-node and the programs mcsim starts (workloads, samples,
#                               the all-reduce benchmark)
#   P/<libdir>/mcsim/           libcuda.so.1 (and libcuda.so), libnvidia-ml.so.1 and libmcsim-nvtx.so: a directory of its own, so that the
#                               simulator never shadows a real driver by accident
#   P/<libdir>/mcsim/record-real/libcuda.so.1   the recording library for real drivers
#   P/<libdir>/libmcsim_kernels.a               the kernel library's image (mcsim/kernels.h)
#   P/include/mcsim/            the headers: mcsim.h (C API), api.h and kernel_model.h (C++ API),
#                               kernels.h, cuda_multicast_v2.h
#   P/<libdir>/cmake/mcsim/     the package: find_package(mcsim) gives mcsim::cuda (the driver),
#                               mcsim::api (the driver and mcsim's API headers), mcsim::kernels
#
# <libdir> is CMAKE_INSTALL_LIBDIR; the installed mcsim finds the driver relative to itself
# (tools/mcsim/driver_library.cpp), so the prefix can move.
include(CMakePackageConfigHelpers)

set(MCSIM_INSTALL_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/mcsim)

set_target_properties(cuda PROPERTIES EXPORT_NAME cuda)
set_target_properties(mcsim_api PROPERTIES EXPORT_NAME api)
set_target_properties(mcsim_kernels PROPERTIES EXPORT_NAME kernels)
install(TARGETS cuda mcsim_api mcsim_kernels EXPORT mcsimTargets
        LIBRARY DESTINATION ${MCSIM_INSTALL_DRIVER_DIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS nvidia-ml mcsim-nvtx LIBRARY DESTINATION ${MCSIM_INSTALL_DRIVER_DIR})
install(TARGETS cuda_record_real LIBRARY DESTINATION ${MCSIM_INSTALL_DRIVER_DIR}/record-real)
install(TARGETS mcsim mcsim-node
                mcsim_workload_nccl mcsim_workload_pytorch mcsim_workload_vmm
                mcsim_sample_vmm_copies mcsim_sample_kernel_launches
                mcsim_bench_allreduce
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/mcsim DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} FILES_MATCHING PATTERN "*.h")

install(EXPORT mcsimTargets NAMESPACE mcsim:: DESTINATION ${MCSIM_INSTALL_CMAKE_DIR})
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/mcsimConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/package/mcsimConfig.cmake
                              INSTALL_DESTINATION ${MCSIM_INSTALL_CMAKE_DIR}
                              PATH_VARS CMAKE_INSTALL_BINDIR MCSIM_INSTALL_DRIVER_DIR)
# 0.x: a minor release may change the API (mcsim.h's MCSIM_API_VERSION says which C API it is).
write_basic_package_version_file(${PROJECT_BINARY_DIR}/package/mcsimConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/package/mcsimConfig.cmake ${PROJECT_BINARY_DIR}/package/mcsimConfigVersion.cmake
        DESTINATION ${MCSIM_INSTALL_CMAKE_DIR})
