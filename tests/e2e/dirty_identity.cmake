# Writes OUTPUT, the build identity of a dirty tree, for meshlearn-launch-dirty
# (tests/e2e/CMakeLists.txt): makes the git checkout CHECKOUT with one commit and one uncommitted
# change, and runs the build's own capture script SCRIPT (cmake/build_version.cmake) over it. Run
# at build time as `cmake -DCHECKOUT=<folder> -DOUTPUT=<file.cc> -DFALLBACK=<version>
# -DSCRIPT=<cmake/build_version.cmake> -P dirty_identity.cmake`.
set(git git -c user.name=meshlearn -c user.email=meshlearn@localhost -c commit.gpgsign=false)
file(REMOVE_RECURSE "${CHECKOUT}")
file(MAKE_DIRECTORY "${CHECKOUT}")
file(WRITE "${CHECKOUT}/tracked.txt" "the committed state\n")
foreach(step "init -q" "add tracked.txt" "commit -q -m committed")
  separate_arguments(arguments UNIX_COMMAND "${step}")
  execute_process(COMMAND ${git} -C "${CHECKOUT}" ${arguments} RESULT_VARIABLE status)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "git ${step} in ${CHECKOUT} failed")
  endif()
endforeach()
file(APPEND "${CHECKOUT}/tracked.txt" "an uncommitted change\n")
execute_process(COMMAND ${CMAKE_COMMAND} -DSOURCE_DIR=${CHECKOUT} -DOUTPUT=${OUTPUT}
                        -DFALLBACK=${FALLBACK} -P ${SCRIPT} RESULT_VARIABLE status)
file(READ "${OUTPUT}" identity)
if(NOT status EQUAL 0 OR NOT identity MATCHES "kClean = false")
  message(FATAL_ERROR "${SCRIPT} did not capture ${CHECKOUT} as a dirty tree")
endif()
