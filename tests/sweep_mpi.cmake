# The "done when" sweep of issue 12 once in one process and once under mpirun -n 3 (oversubscribed
# on a small machine); the two files must be identical byte for byte. A rank that dies must fail
# the run without writing the file.
set(ARGS sweep ${SCENE} --grid dt=0.001:0.02:8 --grid integrator=vi-maximal,vi-midpoint,rk4 --set duration=5 --quiet)
file(REMOVE ${OUT}_1.csv ${OUT}_3.csv ${OUT}_dead.csv)
execute_process(COMMAND ${NOETHER} ${ARGS} --out ${OUT}_1.csv RESULT_VARIABLE r1)
execute_process(COMMAND ${MPIEXEC} -n 3 --oversubscribe ${NOETHER} ${ARGS} --threads 1 --out ${OUT}_3.csv
                RESULT_VARIABLE r3 OUTPUT_VARIABLE o3 ERROR_VARIABLE e3)
if(NOT r1 EQUAL 0 OR NOT r3 EQUAL 0)
  message(FATAL_ERROR "sweep mpi: exit ${r1} (one process), ${r3} (mpirun): ${o3} ${e3}")
endif()
file(READ ${OUT}_1.csv a)
file(READ ${OUT}_3.csv b)
if(NOT a STREQUAL b)
  message(FATAL_ERROR "sweep mpi: the files differ (${OUT}_1.csv, ${OUT}_3.csv)")
endif()
string(REGEX MATCHALL "\n" lines "${a}")
list(LENGTH lines n)
if(NOT n EQUAL 25)
  message(FATAL_ERROR "sweep mpi: expected 25 lines (header + 24 members), got ${n}")
endif()
message(STATUS "sweep mpi: identical (${n} lines)")
