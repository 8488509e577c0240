# Writes OUT: IN with the first occurrence of FROM replaced by TO (one changed result, or with
# EXPECT one changed anything), then checks that `mcsim diff` finds it: exactly one difference,
# reported as "result FROM_RESULT vs TO_RESULT", or matching EXPECT.
#   cmake -DMCSIM=... -DIN=... -DOUT=... -DFROM=... -DTO=... (-DFROM_RESULT=... -DTO_RESULT=... | -DEXPECT=regex)
#         -P diff_changed_result.cmake
file(READ ${IN} text)
string(FIND "${text}" "${FROM}" at)
if(at LESS 0)
  message(FATAL_ERROR "'${FROM}' is not in ${IN}")
endif()
string(LENGTH "${FROM}" n)
string(SUBSTRING "${text}" 0 ${at} head)
math(EXPR rest "${at} + ${n}")
string(SUBSTRING "${text}" ${rest} -1 tail)
file(WRITE ${OUT} "${head}${TO}${tail}")

# `mcsim diff IN OUT` must find exactly that difference and exit with status 1.
execute_process(COMMAND ${MCSIM} diff ${IN} ${OUT} RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
if(NOT EXPECT)
  set(EXPECT "call [0-9]+ [A-Za-z_0-9]+ \\([^)]*\\): result ${FROM_RESULT} vs ${TO_RESULT}")
endif()
if(NOT status EQUAL 1 OR NOT out MATCHES "1 differences\n  ${EXPECT}")
  message(FATAL_ERROR "mcsim diff did not report the change (status ${status})")
endif()
