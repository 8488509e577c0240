# Records PROGRAM (with ARGS) in mcsim (optionally under FAULTS, on TOPOLOGY) to TRACE, then
# replays TRACE in mcsim: passes when the replay is bit-exact ("0 differences", exit status 0:
# arguments, results, outputs, data digests and simulated timestamps), and, with REQUIRE, when the
# trace holds a line matching REQUIRE (that the calls of interest were made and recorded).
#   cmake -DMCSIM=... -DPROGRAM=... -DTRACE=... [-DARGS=a;b] [-DFAULTS=plan] [-DTOPOLOGY=preset]
#         [-DTRAY=n] [-DVISIBLE=list] [-DREQUIRE=regex] -P round_trip.cmake
# VISIBLE is the recording's CUDA_VISIBLE_DEVICES; the replay runs without it in its environment,
# so it sees those GPUs only if the trace restores the setting.
set(ENV{MCSIM_HANG_GRACE_S} 1)
set(run_args run --record ${TRACE})
if(FAULTS)
  list(APPEND run_args --faults ${FAULTS})
endif()
if(TOPOLOGY)
  list(APPEND run_args --topology ${TOPOLOGY})
endif()
if(DEFINED TRAY)
  list(APPEND run_args --tray ${TRAY})
endif()
if(DEFINED VISIBLE)
  set(ENV{CUDA_VISIBLE_DEVICES} ${VISIBLE})
endif()
execute_process(COMMAND ${MCSIM} ${run_args} -- ${PROGRAM} ${ARGS} RESULT_VARIABLE status OUTPUT_QUIET ERROR_QUIET)
unset(ENV{CUDA_VISIBLE_DEVICES})
if(NOT EXISTS ${TRACE})
  message(FATAL_ERROR "recording ${PROGRAM} left no trace (status ${status})")
endif()
if(REQUIRE)
  file(STRINGS ${TRACE} wanted REGEX "${REQUIRE}" LIMIT_COUNT 1)
  if(NOT wanted)
    message(FATAL_ERROR "${TRACE} has no line matching ${REQUIRE}")
  endif()
endif()
execute_process(COMMAND ${MCSIM} replay ${TRACE} RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}")
if(NOT status EQUAL 0 OR NOT out MATCHES "replayed [1-9][0-9]* calls, 0 differences")
  message(FATAL_ERROR "replay of ${TRACE} is not exact (status ${status}):\n${err}")
endif()
