# `edgerun plugins --plugin-dir DIR` with a copy of the sampler plugin cut to 4096 bytes in
# DIR: one error line naming the file and the segment past its end, the other plugins
# still listed, exit status 0. dlopen mapped that segment and the process died of SIGBUS.
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
execute_process(COMMAND head -c 4096 ${SAMPLER} OUTPUT_FILE ${WORK}/libedgerun_truncated.so RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "could not cut ${SAMPLER}")
endif()
execute_process(COMMAND ${EDGERUN} plugins --plugin-dir ${WORK}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "exit status ${rc}\n${out}\n${err}")
endif()
string(REGEX MATCHALL "error: [^\n]*" errors "${out}")
list(LENGTH errors n_errors)
if(NOT n_errors EQUAL 1 OR
   NOT errors MATCHES "libedgerun_truncated.so: truncated ELF: segment [0-9]+ ends at byte [0-9]+ of a 4096-byte file$")
  message(FATAL_ERROR "expected one error line naming libedgerun_truncated.so and its segment:\n${out}")
endif()
foreach(name formats_gguf cpu_ref sampler example)
  if(NOT out MATCHES "[ \n]${name} ")
    message(FATAL_ERROR "plugin ${name} not listed:\n${out}")
  endif()
endforeach()
