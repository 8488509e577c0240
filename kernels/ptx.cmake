# The checked-in PTX (kernels/mcsim_kernels.ptx): what a build without nvcc embeds.
#   cmake -DNVCC=nvcc -DSOURCE_DIR=<repo> -DWORK=<dir> -DMODE=check   -P ptx.cmake
#   cmake -DNVCC=nvcc -DSOURCE_DIR=<repo> -DWORK=<dir> -DMODE=refresh -P ptx.cmake
# check fails when nvcc now generates different PTX from kernels/mcsim_kernels.cu; refresh
# rewrites the checked-in file. The nvcc command is spelled here only, so both agree.
set(source "${SOURCE_DIR}/kernels/mcsim_kernels.cu")
set(checked_in "${SOURCE_DIR}/kernels/mcsim_kernels.ptx")
set(generated "${WORK}/mcsim_kernels.generated.ptx")
execute_process(
  COMMAND "${NVCC}" -ptx -arch=compute_90 -Werror all-warnings -I "${SOURCE_DIR}/include"
          -o "${generated}" "${source}"
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "nvcc -ptx failed (${rc})")
endif()
if(MODE STREQUAL "refresh")
  file(COPY_FILE "${generated}" "${checked_in}")
  message(STATUS "refreshed ${checked_in}")
  return()
endif()
execute_process(COMMAND "${CMAKE_COMMAND}" -E compare_files "${generated}" "${checked_in}"
                RESULT_VARIABLE differs)
if(differs)
  message(FATAL_ERROR "kernels/mcsim_kernels.ptx is not what ${NVCC} generates from "
          "kernels/mcsim_kernels.cu now (nvcc output: ${generated}). Refresh it with\n"
          "  cmake --build <build dir> --target mcsim_kernels_refresh_ptx\n"
          "and commit the result.")
endif()
