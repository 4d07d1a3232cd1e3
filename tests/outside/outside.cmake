# Two tiny projects outside this tree use tapegrad as a user would: one through the
# installed package (find_package), one through add_subdirectory. ctest configures, builds
# and runs each. The sanitizer builds skip them (a user's plain build cannot link
# sanitized objects).
if(NOT TAPEGRAD_SANITIZE AND NOT TAPEGRAD_TSAN)
  set(outside ${CMAKE_CURRENT_BINARY_DIR}/outside)
  # The projects build with this tree's compiler and generator (the presets': Ninja).
  set(outside_common -G ${CMAKE_GENERATOR} -DCMAKE_CXX_COMPILER=${CMAKE_CXX_COMPILER})
  set(outside_args ${outside_common} -DCMAKE_BUILD_TYPE=Release)
  # The add_subdirectory project compiles the library again from scratch; it checks how the
  # tree is used, not how fast it runs, so -Og without a build type's flags is enough and
  # compiles much faster (-O0 does not compile: xsimd's AVX-512 intrinsics need inlining; on a
  # Zen 5, -O1 took 80 s of CPU, -Og 68 s), and as a unity build (TAPEGRAD_UNITY: 49 s of CPU
  # -> 31 s, when the library was smaller).
  set(outside_args_source ${outside_common} -DCMAKE_BUILD_TYPE= -DCMAKE_CXX_FLAGS=-Og -DTAPEGRAD_UNITY=ON)
  add_test(NAME outside.install
           COMMAND ${CMAKE_COMMAND} --install ${CMAKE_CURRENT_BINARY_DIR} --prefix ${outside}/prefix)
  set_tests_properties(outside.install PROPERTIES FIXTURES_SETUP tapegrad_installed)
  add_test(NAME outside.find_package
           COMMAND ${CMAKE_COMMAND} -DSOURCE=${TG}/tests/outside/installed -DBINARY=${outside}/installed
                   "-DARGS=${outside_args};-DCMAKE_PREFIX_PATH=${outside}/prefix" -P ${TG}/tests/outside/build_and_run.cmake)
  set_tests_properties(outside.find_package PROPERTIES FIXTURES_REQUIRED tapegrad_installed)
  add_test(NAME outside.add_subdirectory
           COMMAND ${CMAKE_COMMAND} -DSOURCE=${TG}/tests/outside/subdirectory -DBINARY=${outside}/subdirectory
                   "-DARGS=${outside_args_source};-DTAPEGRAD_DIR=${TG}" -P ${TG}/tests/outside/build_and_run.cmake)
  # It compiles the library again, from scratch (-j2): start it first, beside the short tests
  # (its own slot, RUN_SERIAL, left a core idle for its 50 s on a Zen 5).
  set_tests_properties(outside.add_subdirectory PROPERTIES COST 2000 TIMEOUT 900)
endif()
