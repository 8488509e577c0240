# The checked-in PTX (kernels/mcsim_kernels.ptx): what a build without nvcc embeds.
#   cmake -DNVCC=nvcc -DSOURCE_DIR=<repo> -DWORK=<dir> -DMODE=check   -P ptx.cmake
#   cmake -DNVCC=nvcc -DSOURCE_DIR=<repo> -DWORK=<dir> -DMODE=refresh -P ptx.cmake
# check fails when nvcc now generates different PTX from kernels/mcsim_kernels.cu; refresh
# rewrites the checked-in file. The nvcc command is spelled here only, so both agree. check reads
# past the header comments that name the toolkit (build ID, release, NVVM version): a toolkit
# update that generates the same PTX passes.
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
# The PTX of `path` without nvcc's toolkit lines, e.g.
#   // Compiler Build ID: CL-36424714
#   // Cuda compilation tools, release 13.0, V13.0.88
#   // Based on NVVM 7.0.1
function(read_ptx_without_toolkit_lines path out)
  file(READ "${path}" text)
  string(REGEX REPLACE "// (Compiler Build ID|Cuda compilation tools|Based on NVVM)[^\n]*\n" "" text "${text}")
  set(${out} "${text}" PARENT_SCOPE)
endfunction()
read_ptx_without_toolkit_lines("${generated}" generated_ptx)
read_ptx_without_toolkit_lines("${checked_in}" checked_in_ptx)
if(NOT generated_ptx STREQUAL checked_in_ptx)
  message(FATAL_ERROR "kernels/mcsim_kernels.ptx is not what ${NVCC} generates from "
          "kernels/mcsim_kernels.cu now (nvcc output: ${generated}). Refresh it with\n"
          "  cmake --build <build dir> --target mcsim_kernels_refresh_ptx\n"
          "and commit the result.")
endif()
