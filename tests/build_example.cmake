# Configure and build an out-of-tree example against an installed noether (ctest step).
# -DSRC=<example source> -DBUILD=<build dir> -DPREFIX=<install prefix>
file(REMOVE_RECURSE ${BUILD})
execute_process(COMMAND ${CMAKE_COMMAND} -S ${SRC} -B ${BUILD} -G Ninja -DCMAKE_PREFIX_PATH=${PREFIX}
                        -DCMAKE_BUILD_TYPE=RelWithDebInfo RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "configuring ${SRC} against ${PREFIX} failed")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build ${BUILD} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "building ${SRC} failed")
endif()
