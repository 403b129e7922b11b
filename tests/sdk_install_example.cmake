# A third party's view of the SDK: install edgerun into a fresh prefix, build the example
# plugin from its own folder against that prefix alone, and have edgerun load it.
file(REMOVE_RECURSE ${WORK})
execute_process(COMMAND ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${WORK}/prefix
  RESULT_VARIABLE rc OUTPUT_QUIET)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "install failed (${rc})")
endif()
# A cross build (scripts/aarch64-check.sh) builds the example with its toolchain too.
set(cross)
if(TOOLCHAIN)
  set(cross -DCMAKE_TOOLCHAIN_FILE=${TOOLCHAIN} -DCMAKE_FIND_ROOT_PATH=${WORK}/prefix)
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -S ${SOURCE_DIR}/examples/backend_example -B ${WORK}/build
  -G ${GENERATOR} -DCMAKE_PREFIX_PATH=${WORK}/prefix -DCMAKE_BUILD_TYPE=Release ${cross}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "configuring the example against the installed SDK failed:\n${out}\n${err}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build ${WORK}/build RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "building the example against the installed SDK failed:\n${out}\n${err}")
endif()
# The installed binary, with only the example's build folder added to its search path.
execute_process(COMMAND ${WORK}/prefix/bin/edgerun plugins --plugin-dir ${WORK}/build
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT out MATCHES "backend  example [^\n]*${WORK}/build/libedgerun_example.so")
  message(FATAL_ERROR "installed edgerun did not load the example built against the SDK:\n${out}\n${err}")
endif()
if(NOT out MATCHES "cpu_ref [^\n]*${WORK}/prefix/lib")
  message(FATAL_ERROR "installed edgerun did not find its own plugins in the prefix:\n${out}")
endif()
