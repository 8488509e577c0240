# The example user project (examples/user_project) against an installed mcsim, as a user builds it:
#   cmake -DMCSIM_BUILD=<mcsim build> -DPREFIX=<dir> -DSOURCE=<examples/user_project> -DWORK=<dir>
#         -DGENERATOR=<generator> -DC_COMPILER=<cc> -DC_FLAGS=<flags> -DLINK_FLAGS=<flags>
#         -DDRIVER_DIR=<lib/mcsim, relative to PREFIX> -P user_project.cmake
# installs MCSIM_BUILD to PREFIX, checks the layout, then configures, builds and runs the project's
# tests (ctest) with CMAKE_PREFIX_PATH=PREFIX.
function(step what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (${rc}):\n${out}")
  endif()
  message(STATUS "${what}: ok")
endfunction()

file(REMOVE_RECURSE "${PREFIX}" "${WORK}")
step("cmake --install" "${CMAKE_COMMAND}" --install "${MCSIM_BUILD}" --prefix "${PREFIX}")

# The driver in a directory of its own, nothing named libcuda beside other libraries.
foreach(file bin/mcsim bin/mcsim-node ${DRIVER_DIR}/libcuda.so.1 ${DRIVER_DIR}/record-real/libcuda.so.1
             include/mcsim/mcsim.h include/mcsim/api.h)
  if(NOT EXISTS "${PREFIX}/${file}")
    message(FATAL_ERROR "the install has no ${file}")
  endif()
endforeach()
get_filename_component(libdir "${PREFIX}/${DRIVER_DIR}" DIRECTORY)
file(GLOB shadowing "${libdir}/libcuda*")
if(shadowing)
  message(FATAL_ERROR "the install puts a driver where it shadows a real one: ${shadowing}")
endif()

step("configure examples/user_project" "${CMAKE_COMMAND}" -S "${SOURCE}" -B "${WORK}" -G "${GENERATOR}"
     "-DCMAKE_PREFIX_PATH=${PREFIX}" "-DCMAKE_C_COMPILER=${C_COMPILER}" "-DCMAKE_C_FLAGS=${C_FLAGS}"
     "-DCMAKE_EXE_LINKER_FLAGS=${LINK_FLAGS}")
step("build examples/user_project" "${CMAKE_COMMAND}" --build "${WORK}")
step("ctest examples/user_project" "${CMAKE_CTEST_COMMAND}" --test-dir "${WORK}" --output-on-failure)
