# The recording library for real drivers, exercised with mcsim's own libcuda.so.1 standing in for
# the real one (MCSIM_REAL_LIBCUDA), as docs/traces.md's real-GPU validation runs it on a GPU:
#   1. the sample program recorded through build/lib/record-real/libcuda.so.1 ("real" trace),
#      then replayed in mcsim: no result differs;
#   2. the committed mcsim sample replayed with --target real: no result differs.
#   cmake -DMCSIM=... -DPROGRAM=... -DLIBDIR=... -DSAMPLE=... -DTRACE=... [-DEXPECT=regex] -P real_pipeline.cmake
# (EXPECT: what the program prints when it succeeds; "vmm-copies: ok" unless given.)
if(NOT EXPECT)
  set(EXPECT "vmm-copies: ok")
endif()
set(ENV{MCSIM_REAL_LIBCUDA} ${LIBDIR}/libcuda.so.1)
set(ENV{MCSIM_TOPOLOGY} single-h100)
set(ENV{MCSIM_RECORD} ${TRACE})
set(ENV{LD_LIBRARY_PATH} ${LIBDIR}/record-real)
execute_process(COMMAND ${PROGRAM} RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
unset(ENV{MCSIM_RECORD})
unset(ENV{LD_LIBRARY_PATH})
if(NOT status EQUAL 0 OR NOT out MATCHES "${EXPECT}")
  message(FATAL_ERROR "the sample failed through the recording library (status ${status}):\n${out}${err}")
endif()
file(STRINGS ${TRACE} header LIMIT_COUNT 1)
if(NOT header MATCHES "\"target\":\"real\"")
  message(FATAL_ERROR "the trace's header is not a real target's: ${header}")
endif()
foreach(args "replay;${TRACE};--topology;single-h100" "replay;${SAMPLE};--target;real")
  execute_process(COMMAND ${MCSIM} ${args} RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message("mcsim ${args}: ${out}")
  if(NOT status EQUAL 0 OR NOT out MATCHES "replayed [1-9][0-9]* calls, 0 differences")
    message(FATAL_ERROR "mcsim ${args} found differences (status ${status}):\n${err}")
  endif()
endforeach()
