# What users trip over with traces of their own programs (issue 21, "Replays that hold"), with
# mcsim_sample_user_program (tools/traces/user_program.c). One SCENARIO per test:
#   big_copy      a 1 MiB host-to-device copy, recorded with the old 64 KiB data limit, replays
#                 with 0 differences and says up front which call it cannot reproduce; recorded
#                 with the default limit it replays bit-exactly and says nothing of the kind
#   hang_abort    with MCSIM_ON_HANG=abort the trace of a hung program still has its end record
#                 and the calls that hung, the timeline is written, and the trace replays (the
#                 replay aborts at the same hang) and minimises --until deadlock
#   diff_kernels  traces of two programs that launch different kernels: diff lists both kernels
#                 with their simulated times, which the end records hold
#   fork          a child forked after cuInit is refused and not recorded, its parent replays
#                 exactly; one forked before cuInit records a trace of its own, and on a shared
#                 node the parent's trace alone is refused at once, the two replay exactly
#   ipc           on a shared node, a child forked before cuInit opens the IPC memory and event
#                 handles its parent exported (issue 18): the two traces replay exactly, the
#                 importer given the handles the replaying exporter made
#   minimized     a minimised trace (SAMPLE under PLAN) replays with the failure as its only
#                 differences
#   cmake -DMCSIM=... -DPROGRAM=... -DWORK=dir -DSCENARIO=... [-DSAMPLE=... -DPLAN=...] -P user_program.cmake
file(MAKE_DIRECTORY ${WORK})
set(ENV{MCSIM_TOPOLOGY} single-h100)
set(ENV{MCSIM_SEED} 1)
set(ENV{MCSIM_HANG_GRACE_S} 1)

function(run)
  cmake_parse_arguments(R "" "EXIT;MATCH;NOMATCH" "COMMAND" ${ARGN})
  execute_process(COMMAND ${R_COMMAND} RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message("$ ${R_COMMAND}\n${out}${err}")
  if(DEFINED R_EXIT AND NOT "${status}" STREQUAL "${R_EXIT}")
    message(FATAL_ERROR "exit status ${status}, expected ${R_EXIT}")
  endif()
  if(DEFINED R_MATCH AND NOT "${out}${err}" MATCHES "${R_MATCH}")
    message(FATAL_ERROR "output does not match '${R_MATCH}'")
  endif()
  if(DEFINED R_NOMATCH AND "${out}${err}" MATCHES "${R_NOMATCH}")
    message(FATAL_ERROR "output matches '${R_NOMATCH}'")
  endif()
  set(last_output "${out}${err}" PARENT_SCOPE)
endfunction()

function(require_line file regex)
  file(STRINGS ${file} found REGEX "${regex}" LIMIT_COUNT 1)
  if(NOT found)
    message(FATAL_ERROR "${file} has no line matching ${regex}")
  endif()
endfunction()

if(SCENARIO STREQUAL "big_copy")
  set(t ${WORK}/big-copy-64k.jsonl)
  set(ENV{MCSIM_RECORD_DATA} 65536)
  run(COMMAND ${MCSIM} run --record ${t} -- ${PROGRAM} EXIT 0)
  unset(ENV{MCSIM_RECORD_DATA})
  run(COMMAND ${MCSIM} replay ${t} EXIT 0
      MATCH "1 call reads host data the trace holds by digest only \\(larger than MCSIM_RECORD_DATA=65536 when recorded\\): [^\n]*cuMemcpyHtoD_v2 \\(1048576 bytes of 'srcHost'\\)[^\n]*\nreplayed [0-9]+ calls, 0 differences\n[0-9]+ data digests differ after host data the trace does not hold")
  set(t ${WORK}/big-copy.jsonl)
  run(COMMAND ${MCSIM} run --record ${t} -- ${PROGRAM} EXIT 0)
  run(COMMAND ${MCSIM} replay ${t} EXIT 0 MATCH "replayed [0-9]+ calls, 0 differences" NOMATCH "digest only|not counted")
elseif(SCENARIO STREQUAL "hang_abort")
  set(t ${WORK}/hang-abort.jsonl)
  set(timeline ${WORK}/hang-abort.timeline.json)
  file(REMOVE ${t} ${timeline})
  set(ENV{MCSIM_ON_HANG} abort)
  set(ENV{MCSIM_TIMELINE} ${timeline})
  run(COMMAND ${MCSIM} run --record ${t} -- ${PROGRAM} --hang MATCH "aborting \\(MCSIM_ON_HANG=abort\\)")
  unset(ENV{MCSIM_ON_HANG})
  unset(ENV{MCSIM_TIMELINE})
  require_line(${t} "\"call\":\"cuCtxSynchronize\".*\"aborted\":true")
  require_line(${t} "^{\"end\":true,\"calls\":[0-9]+")
  if(NOT EXISTS ${timeline})
    message(FATAL_ERROR "no timeline written on abort: ${timeline}")
  endif()
  require_line(${timeline} "cuStreamWaitValue32")
  run(COMMAND ${MCSIM} replay ${t} EXIT 0
      MATCH "the replay aborted on a hang, as the recording did \\(MCSIM_ON_HANG=abort\\)\nreplayed [0-9]+ calls, 0 differences")
  run(COMMAND ${MCSIM} minimize ${t} --until deadlock -o ${WORK}/hang-abort.min.jsonl EXIT 0
      MATCH "minimized [0-9]+ calls to [0-9]+ \\(a reported deadlock or hang\\)")
elseif(SCENARIO STREQUAL "diff_kernels")
  set(a ${WORK}/kernel-copy.jsonl)
  set(b ${WORK}/kernel-reduce.jsonl)
  run(COMMAND ${MCSIM} run --record ${a} -- ${PROGRAM} --bytes 65536 --kernel copy EXIT 0)
  run(COMMAND ${MCSIM} run --record ${b} -- ${PROGRAM} --bytes 65536 --kernel reduce EXIT 0)
  require_line(${a} "\"kernels\":\\[\\[[0-9]+,[0-9]+,[0-9]+\\]\\]")
  run(COMMAND ${MCSIM} diff ${a} ${b} EXIT 1
      MATCH "kernel \"mcsim_copy\" vs \"mcsim_reduce\".*cuLaunchKernel mcsim_copy +1 vs 0 calls +[1-9][0-9]* +0  \\(only in A\\)\n  cuLaunchKernel mcsim_reduce +0 vs 1 calls +0 +[1-9][0-9]*  \\(only in B\\)")
  # The same program twice: every kernel time agrees (a replay checks them exactly).
  run(COMMAND ${MCSIM} replay ${a} EXIT 0 MATCH "replayed [0-9]+ calls, 0 differences")
elseif(SCENARIO STREQUAL "fork")
  # A child forked after cuInit: its calls are refused (as CUDA refuses them) and not recorded.
  set(t ${WORK}/fork.jsonl)
  file(REMOVE_RECURSE ${WORK})
  file(MAKE_DIRECTORY ${WORK})
  run(COMMAND ${MCSIM} run --record ${t} -- ${PROGRAM} --bytes 65536 --fork EXIT 0
      MATCH "forked child: cuInit 3, cuDeviceGetCount 3, cuMemAlloc 3, cuMemFree 3")
  file(GLOB children ${WORK}/fork-*.jsonl)
  if(children)
    message(FATAL_ERROR "a child forked after cuInit left a trace: ${children}")
  endif()
  run(COMMAND ${MCSIM} replay ${t} --timeout 20 EXIT 0 MATCH "replayed [0-9]+ calls, 0 differences")
  # A child forked before cuInit is a CUDA process of its own and records beside its parent
  # (fork-early-PID.jsonl). On a shared node the two are one run: the parent's trace alone is
  # refused at once, naming what is missing; the two replay together exactly.
  set(ENV{MCSIM_NODE_DIR} ${WORK}/nodes)
  file(MAKE_DIRECTORY ${WORK}/nodes)
  file(CHMOD ${WORK}/nodes DIRECTORY_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE)
  set(node fork-early-node)
  run(COMMAND ${MCSIM} node start --name ${node} --topology single-h100 EXIT 0)
  set(ENV{MCSIM_NODE} ${node})
  set(t ${WORK}/fork-early.jsonl)
  execute_process(COMMAND ${MCSIM} run --record ${t} -- ${PROGRAM} --bytes 65536 --fork-early RESULT_VARIABLE status)
  unset(ENV{MCSIM_NODE})
  execute_process(COMMAND ${MCSIM} node stop --name ${node})
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "the program forking before cuInit failed on a shared node (status ${status})")
  endif()
  file(GLOB children ${WORK}/fork-early-*.jsonl)
  list(LENGTH children n)
  if(NOT n EQUAL 1)
    message(FATAL_ERROR "expected the child's trace beside the parent's, found: ${children}")
  endif()
  run(COMMAND ${MCSIM} replay ${t} --timeout 20 EXIT 2 MATCH "the traces of some processes of the run are missing")
  run(COMMAND ${MCSIM} replay ${t} ${children} --timeout 60 EXIT 0
      MATCH "replayed 2 processes on a shared node \\(the recorded admission order\\): 0 differences")
elseif(SCENARIO STREQUAL "ipc")
  set(ENV{MCSIM_NODE_DIR} ${WORK}/nodes)
  file(REMOVE_RECURSE ${WORK})
  file(MAKE_DIRECTORY ${WORK}/nodes)
  file(CHMOD ${WORK}/nodes DIRECTORY_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE)
  set(node ipc-node)
  run(COMMAND ${MCSIM} node start --name ${node} --topology single-h100 EXIT 0)
  set(ENV{MCSIM_NODE} ${node})
  set(t ${WORK}/ipc.jsonl)
  execute_process(COMMAND ${MCSIM} run --record ${t} -- ${PROGRAM} --bytes 65536 --ipc RESULT_VARIABLE status
                  OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message("${out}${err}")
  unset(ENV{MCSIM_NODE})
  execute_process(COMMAND ${MCSIM} node stop --name ${node})
  if(NOT status EQUAL 0 OR NOT "${out}${err}" MATCHES "the importer read the exporter's buffer")
    message(FATAL_ERROR "the program passing IPC handles failed on a shared node (status ${status})")
  endif()
  file(GLOB children ${WORK}/ipc-*.jsonl)
  list(LENGTH children n)
  if(NOT n EQUAL 1)
    message(FATAL_ERROR "expected the importer's trace beside the exporter's, found: ${children}")
  endif()
  # The handles are recorded as shareable handles: the export's bytes by name, the import's with
  # the identity the replay hands the new bytes over by.
  file(READ ${t} exporter)
  file(READ ${children} importer)
  foreach(call cuIpcGetMemHandle cuIpcGetEventHandle)
    if(NOT exporter MATCHES "\"call\":\"${call}\"[^\n]*\"out\":{\"pHandle\":\"ipc[0-9]+\"}[^\n]*\"shared\":\"ipc:")
      message(FATAL_ERROR "the exporter's ${call} does not record the handle")
    endif()
  endforeach()
  foreach(call cuIpcOpenMemHandle_v2 cuIpcOpenEventHandle)
    if(NOT importer MATCHES "\"call\":\"${call}\"[^\n]*\"handle\":{\"data\":\"[0-9a-f]+\"}[^\n]*\"shared\":\"ipc:")
      message(FATAL_ERROR "the importer's ${call} does not record the handle it opens")
    endif()
  endforeach()
  run(COMMAND ${MCSIM} replay ${t} ${children} --timeout 60 EXIT 0
      MATCH "replayed 2 processes on a shared node \\(the recorded admission order\\): 0 differences")
elseif(SCENARIO STREQUAL "minimized")
  # The sample minimised under a plan that fails its second device-to-host copy replays with the
  # failure as its first difference: the kept calls return as in the whole trace's replay up to
  # it, their names renumbered, their times and outputs as a replay of them has them.
  set(t ${WORK}/vmm-copies.min.jsonl)
  run(COMMAND ${MCSIM} minimize ${SAMPLE} --faults ${PLAN} --until result=CUDA_ERROR_ILLEGAL_ADDRESS@cuMemcpyDtoH -o ${t}
      EXIT 0)
  run(COMMAND ${MCSIM} replay ${t} --explain 100 EXIT 1 MATCH "replayed [0-9]+ calls, [1-9][0-9]* differences\n")
  string(REGEX MATCHALL "\n  call [^\n]*" lines "${last_output}")
  # The first difference is the failure; nothing differs before it (no renamed handle, no shifted
  # time, no call that lost what it needed).
  list(GET lines 0 first)
  if(NOT first MATCHES "cuMemcpyDtoH_v2 [^\n]*: result CUDA_SUCCESS vs CUDA_ERROR_ILLEGAL_ADDRESS")
    message(FATAL_ERROR "the first difference is not the failure:${first}")
  endif()
  string(REGEX REPLACE "^\n  call ([0-9]+) .*" "\\1" failing "${first}")
  foreach(line ${lines})
    string(REGEX REPLACE "^\n  call ([0-9]+) .*" "\\1" n "${line}")
    if(n LESS failing)
      message(FATAL_ERROR "a difference before the failure:${line}")
    endif()
  endforeach()
else()
  message(FATAL_ERROR "unknown SCENARIO ${SCENARIO}")
endif()
