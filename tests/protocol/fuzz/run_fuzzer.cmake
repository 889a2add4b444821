# Runs a libFuzzer binary for a bounded time on a scratch copy of its seed corpus, so that neither
# the source tree nor the generated seeds change; fails when the fuzzer reports a crash, a leak, a
# timeout or running out of memory. Called by CTest (tests/protocol/fuzz/CMakeLists.txt):
#   cmake -DFUZZER=<binary> -DSEEDS=<dir> -DDICT=<file> -DWORK=<dir> -DSECONDS=<n> -DRUNS=<n>
#         -P run_fuzzer.cmake
# WORK/corpus holds the grown corpus and WORK/artifacts the reproducers of the last run; both are
# emptied at the start of each run.
foreach(var FUZZER SEEDS DICT WORK SECONDS RUNS)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "run_fuzzer.cmake: -D${var}=... is required")
  endif()
endforeach()
if(NOT IS_DIRECTORY "${SEEDS}")
  message(FATAL_ERROR "run_fuzzer.cmake: no seed corpus at ${SEEDS}; build the "
                      "protocol_fuzz_seed_corpus target first")
endif()

file(REMOVE_RECURSE "${WORK}/corpus" "${WORK}/artifacts")
file(MAKE_DIRECTORY "${WORK}/corpus" "${WORK}/artifacts")
file(COPY "${SEEDS}/" DESTINATION "${WORK}/corpus")

# -max_len: the seeds are at most a few hundred bytes; 4096 leaves room for many frames, long
# strings and big arrays without slowing each run down.
set(command "${FUZZER}" "-max_total_time=${SECONDS}" "-runs=${RUNS}" -max_len=4096 -timeout=10
    -rss_limit_mb=2048 -print_final_stats=1 "-dict=${DICT}" "-artifact_prefix=${WORK}/artifacts/"
    "${WORK}/corpus")
list(JOIN command " " shown)
message(STATUS "run_fuzzer: ${shown}")
execute_process(COMMAND ${command} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  file(GLOB found "${WORK}/artifacts/*")
  message(FATAL_ERROR "run_fuzzer: the fuzzer failed (exit ${rc}). Reproducers: ${found}\n"
                      "Replay one with: ${FUZZER} <reproducer>")
endif()
