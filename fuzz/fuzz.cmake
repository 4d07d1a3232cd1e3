# The fuzz targets (fuzz/fuzz_*.cpp). With TAPEGRAD_FUZZ (clang, the `fuzz` preset) they are
# libFuzzer binaries (scripts/fuzz.sh runs them); otherwise they are linked with
# replay_main.cpp. Either way ctest replays each committed corpus (fuzz/corpus/NAME, every
# past finding included) as a regression test: fast, and under the sanitizers in CI.
set(TAPEGRAD_FUZZ_TARGETS npy idx case checkpoint)
foreach(t ${TAPEGRAD_FUZZ_TARGETS})
  if(NOT EXISTS ${TG}/fuzz/fuzz_${t}.cpp)
    continue()
  endif()
  if(TAPEGRAD_FUZZ)
    add_executable(fuzz_${t} ${TG}/fuzz/fuzz_${t}.cpp)
    target_link_options(fuzz_${t} PRIVATE -fsanitize=fuzzer)
    set(replay_args -runs=0)
  else()
    add_executable(fuzz_${t} ${TG}/fuzz/fuzz_${t}.cpp ${TG}/fuzz/replay_main.cpp)
    set(replay_args)
  endif()
  target_link_libraries(fuzz_${t} PRIVATE tapegrad_lib tapegrad_spec tapegrad_data)
  add_test(NAME fuzz.replay.${t} COMMAND fuzz_${t} ${replay_args} ${TG}/fuzz/corpus/${t})
endforeach()
