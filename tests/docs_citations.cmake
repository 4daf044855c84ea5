# Every docs/*.md that a source file, a help text, a script or another doc names must exist
# (issue 32: a sweeps page was cited eight times and did not exist). Run by ctest as
#   cmake -DSOURCE_DIR=... -P tests/docs_citations.cmake
file(GLOB_RECURSE files RELATIVE ${SOURCE_DIR}
  ${SOURCE_DIR}/*.cpp ${SOURCE_DIR}/*.hpp ${SOURCE_DIR}/*.h ${SOURCE_DIR}/*.c ${SOURCE_DIR}/*.md
  ${SOURCE_DIR}/*.py ${SOURCE_DIR}/*.lua ${SOURCE_DIR}/*.cmake ${SOURCE_DIR}/*.txt ${SOURCE_DIR}/*.html
  ${SOURCE_DIR}/Makefile)
set(checked 0)
set(missing 0)
foreach(f ${files})
  if(f MATCHES "^(build|\\.git)")
    continue()
  endif()
  file(STRINGS ${SOURCE_DIR}/${f} lines REGEX "docs/[A-Za-z0-9_./-]+\\.md")
  foreach(line ${lines})
    string(REGEX MATCHALL "docs/[A-Za-z0-9_./-]+\\.md" cited "${line}")
    foreach(c ${cited})
      math(EXPR checked "${checked} + 1")
      if(NOT EXISTS ${SOURCE_DIR}/${c})
        message(SEND_ERROR "${f}: cites ${c}, which does not exist")
        math(EXPR missing "${missing} + 1")
      endif()
    endforeach()
  endforeach()
endforeach()
math(EXPR ok "${checked} - ${missing}")
message("${ok} passed, ${missing} failed")
if(checked LESS 50)
  message(SEND_ERROR "only ${checked} citations found: the scan is broken")
endif()
