# cmake -DNM=nm -DLIBRARY=libcuda.so.1 -DHEADER=include/mcsim/mcsim.h -P check_exports.cmake
# Fails unless LIBRARY exports exactly what driver/exports.map promises: the driver's C ABI (cu*),
# every function of the C API that HEADER declares and no other mcsim_* but the trace recorder's
# hooks (mcsim_trace_*), the NVML library's bridge (mcsim_nvml_*, driver/nvml_bridge.h), the NVTX injection library's (mcsim_nvtx_*, driver/nvtx_bridge.h), and SystemC's sc_main. Anything else (a C++ symbol, SystemC or Boost
# internals, the driver's mcsim_impl_* entry points) is named in the failure.
execute_process(COMMAND "${NM}" -D --defined-only "${LIBRARY}" OUTPUT_VARIABLE listing RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${NM} -D --defined-only ${LIBRARY} failed (${rc})")
endif()

# The C API: every function the header declares (its static inline helpers are no exports).
file(STRINGS "${HEADER}" declarations REGEX "^[a-z][a-z_0-9 ]*[ *]+mcsim_[a-z_0-9]+\\(")
set(api)
foreach(line IN LISTS declarations)
  if(line MATCHES "^static ")
    continue()
  endif()
  string(REGEX MATCH "mcsim_[a-z_0-9]+\\(" name "${line}")
  string(REPLACE "(" "" name "${name}")
  list(APPEND api ${name})
endforeach()
list(LENGTH api count)
if(count LESS 10)
  message(FATAL_ERROR "found only ${count} C API functions in ${HEADER}: ${api}")
endif()

string(REPLACE "\n" ";" lines "${listing}")
set(unexpected)
set(exported)
foreach(line IN LISTS lines)
  if(NOT line MATCHES "^[0-9a-f]* *[A-Za-z] (.+)$")
    continue()
  endif()
  set(symbol "${CMAKE_MATCH_1}")
  string(REGEX REPLACE "@.*" "" symbol "${symbol}")  # a version suffix, if any
  list(APPEND exported ${symbol})
  if(symbol MATCHES "^cu[A-Z][A-Za-z0-9_]*$" OR symbol MATCHES "^mcsim_trace_[a-z_]+$" OR symbol MATCHES "^mcsim_nvml_[a-z_]+$" OR symbol MATCHES "^mcsim_nvtx_[a-z_]+$" OR symbol STREQUAL "sc_main")
    continue()
  endif()
  list(FIND api "${symbol}" at)
  if(at EQUAL -1)
    list(APPEND unexpected ${symbol})
  endif()
endforeach()

set(missing)
foreach(name IN LISTS api ITEMS cuInit cuGetProcAddress_v2 sc_main mcsim_nvml_attach mcsim_nvtx_attach)
  list(FIND exported ${name} at)
  if(at EQUAL -1)
    list(APPEND missing ${name})
  endif()
endforeach()

if(unexpected OR missing)
  list(JOIN unexpected "\n  " unexpected_text)
  list(JOIN missing "\n  " missing_text)
  message(FATAL_ERROR "${LIBRARY}: exports differ from driver/exports.map's promise\n"
          "exported but neither cu*, the C API of ${HEADER}, mcsim_trace_*, mcsim_nvml_*, mcsim_nvtx_* nor sc_main:\n  ${unexpected_text}\n"
          "not exported:\n  ${missing_text}")
endif()
message(STATUS "${LIBRARY}: cu*, ${count} C API functions, mcsim_trace_*, sc_main; nothing else")
