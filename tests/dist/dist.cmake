# The MPI tests (TAPEGRAD_MPI): tapegrad_dist_tests, the tapegrad::dist unit tests, run under
# mpirun on 2 ranks and alone (a world of 1); and the acceptance test of --distributed:
# fashion_classifier on 2 ranks at --batch 32 follows the loss curve of one process at
# --batch 64 (tests/distributed_example.sh).
#
# mpirun is told, through OpenMPI's environment variables, to run as root too (containers),
# to place more ranks than cores, and to use shared memory between the local ranks only
# (btl self,vader: no network needed; no single-copy mechanism, which needs ptrace rights
# that containers often lack).
set(TAPEGRAD_MPI_ENV OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
    OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none)
file(GLOB TAPEGRAD_DIST_TEST_SOURCES CONFIGURE_DEPENDS ${TG}/tests/dist/*.cpp)
add_executable(tapegrad_dist_tests ${TAPEGRAD_DIST_TEST_SOURCES})
target_link_libraries(tapegrad_dist_tests PRIVATE tapegrad_dist tapegrad_catch)
target_compile_options(tapegrad_dist_tests PRIVATE -O0)  # as tapegrad_tests
foreach(ranks 1 2)
  add_test(NAME dist.unit.np${ranks}
           COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${ranks} ${MPIEXEC_PREFLAGS}
                   $<TARGET_FILE:tapegrad_dist_tests> ${MPIEXEC_POSTFLAGS})
  set_tests_properties(dist.unit.np${ranks} PROPERTIES ENVIRONMENT "${TAPEGRAD_MPI_ENV}" TIMEOUT 120)
endforeach()
if(TAPEGRAD_BUILD_EXAMPLES AND EXISTS /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz)
  add_test(NAME example.fashion_classifier.distributed
           COMMAND bash ${TG}/tests/distributed_example.sh ${MPIEXEC_EXECUTABLE} $<TARGET_FILE:fashion_classifier>
                   ${CMAKE_CURRENT_BINARY_DIR}/distributed_example)
  set_tests_properties(example.fashion_classifier.distributed PROPERTIES ENVIRONMENT "${TAPEGRAD_MPI_ENV}" TIMEOUT 300)
endif()
