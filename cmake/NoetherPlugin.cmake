# noether_add_plugin(<target> SOURCES <src>... [OUTPUT_DIR <dir>] [NO_INSTALL])
#
# Builds a noether plugin: a shared module named <target>.so that links the kernel and
# exports only its `noether_plugin` entry symbol. Used by the built-in plugins and, through
# find_package(noether), by out-of-tree plugins.
function(noether_add_plugin target)
  cmake_parse_arguments(P "NO_INSTALL" "OUTPUT_DIR" "SOURCES" ${ARGN})
  add_library(${target} MODULE ${P_SOURCES})
  if(TARGET noether::noether)
    target_link_libraries(${target} PRIVATE noether::noether)
  else()
    target_link_libraries(${target} PRIVATE noether)
  endif()
  set_target_properties(${target} PROPERTIES PREFIX "" CXX_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON)
  if(P_OUTPUT_DIR)
    set_target_properties(${target} PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${P_OUTPUT_DIR})
  elseif(DEFINED NOETHER_PLUGIN_OUTPUT_DIR)
    set_target_properties(${target} PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${NOETHER_PLUGIN_OUTPUT_DIR})
  endif()
  if(NOT P_NO_INSTALL AND DEFINED NOETHER_PLUGIN_INSTALL_DIR)
    set_target_properties(${target} PROPERTIES INSTALL_RPATH "$ORIGIN/../..")
    install(TARGETS ${target} LIBRARY DESTINATION ${NOETHER_PLUGIN_INSTALL_DIR})
  endif()
endfunction()
