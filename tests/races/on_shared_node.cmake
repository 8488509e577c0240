# Runs a test binary against a shared node of its own: starts one (`mcsim node start`, in a
# private directory of its own), runs the test with MCSIM_NODE naming it, stops it, and passes when
# the test passed, attached to the node, and the node stopped cleanly.
#
#   cmake -DMCSIM=path/to/mcsim -DTEST=path/to/test -DFILTER=gtest-filter -P on_shared_node.cmake
string(RANDOM LENGTH 12 ALPHABET abcdefghijklmnopqrstuvwxyz0123456789 suffix)
set(name "races-${suffix}")
# Short, so that the socket's path fits a sockaddr_un wherever the build lives.
set(dir "/tmp/mcsim-${name}")
file(MAKE_DIRECTORY "${dir}")
file(CHMOD "${dir}" DIRECTORY_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE)
set(ENV{MCSIM_NODE_DIR} "${dir}")

execute_process(COMMAND "${MCSIM}" node start --name "${name}" RESULT_VARIABLE started OUTPUT_VARIABLE out
                ERROR_VARIABLE out)
if(NOT started EQUAL 0)
  file(REMOVE_RECURSE "${dir}")
  message(FATAL_ERROR "mcsim node start exited with ${started}:\n${out}")
endif()

set(ENV{MCSIM_NODE} "${name}")
execute_process(COMMAND "${TEST}" "--gtest_filter=${FILTER}" RESULT_VARIABLE ran OUTPUT_VARIABLE out ERROR_VARIABLE out)
unset(ENV{MCSIM_NODE})
message("${out}")

execute_process(COMMAND "${MCSIM}" node stop --name "${name}" RESULT_VARIABLE stopped OUTPUT_VARIABLE stop_out
                ERROR_VARIABLE stop_out)
file(READ "${dir}/${name}.log" log)
file(REMOVE_RECURSE "${dir}")
if(NOT ran EQUAL 0)
  message(FATAL_ERROR "the test exited with ${ran}; the node's log:\n${log}")
endif()
# The node saw the test's process come and go (it ran on the shared node, not on one of its own).
if(NOT log MATCHES "process [0-9]+ attached")
  message(FATAL_ERROR "the test's process never attached to the node; its log:\n${log}")
endif()
if(NOT stopped EQUAL 0)
  message(FATAL_ERROR "mcsim node stop exited with ${stopped}:\n${stop_out}\nthe node's log:\n${log}")
endif()
