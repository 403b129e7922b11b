# edgerun_add_plugin(<target> SOURCES <files...>)
#
# Builds a plugin: a shared library named libedgerun_<target-without-prefix>.so that
# exports only the entry symbol (everything else hidden, so plugins never clash), and
# links the header-only SDK. Used in-tree and, installed, by third-party plugins.
function(edgerun_add_plugin target)
  cmake_parse_arguments(ARG "" "OUTPUT_NAME" "SOURCES" ${ARGN})
  add_library(${target} MODULE ${ARG_SOURCES})
  if(NOT ARG_OUTPUT_NAME)
    set(ARG_OUTPUT_NAME ${target})
  endif()
  set_target_properties(${target} PROPERTIES
    PREFIX "lib"
    OUTPUT_NAME "edgerun_${ARG_OUTPUT_NAME}"
    CXX_VISIBILITY_PRESET hidden
    CUDA_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON)
  target_link_libraries(${target} PRIVATE edgerun::sdk)
  if(NOT CMAKE_SYSTEM_NAME STREQUAL "Darwin")
    # A plugin that references a symbol nobody defines must fail to link, not to load.
    target_link_options(${target} PRIVATE -Wl,--no-undefined)
  endif()
  if(DEFINED EDGERUN_PLUGIN_BUILD_DIR)
    set_target_properties(${target} PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${EDGERUN_PLUGIN_BUILD_DIR})
  endif()
  if(DEFINED EDGERUN_PLUGIN_INSTALL_DIR AND NOT EDGERUN_PLUGIN_NO_INSTALL)
    install(TARGETS ${target} LIBRARY DESTINATION ${EDGERUN_PLUGIN_INSTALL_DIR})
  endif()
endfunction()
