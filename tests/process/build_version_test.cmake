# cmake/build_version.cmake over small git checkouts made here (label: process): a clean tree is
# clean with no diff hash; a changed tracked file or an untracked file that .gitignore does not
# ignore makes it dirty, with a 16-digit hash that is the same for the same changes and differs
# for others; an ignored file leaves it clean; sources without .git have commit "unknown". Run as
# `cmake -DSCRIPT=<cmake/build_version.cmake> -DWORK=<folder> -P build_version_test.cmake`.
set(git git -c user.name=meshlearn -c user.email=meshlearn@localhost -c commit.gpgsign=false)
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}/tree")

# Captures the identity of SOURCE_DIR into the variables <prefix>_commit, _clean and _hash.
function(capture prefix source_dir)
  execute_process(COMMAND ${CMAKE_COMMAND} -DSOURCE_DIR=${source_dir}
                          -DOUTPUT=${WORK}/${prefix}.cc -DFALLBACK=0.0.0 -P ${SCRIPT}
                  RESULT_VARIABLE status)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "build_version.cmake failed on ${source_dir}")
  endif()
  file(READ "${WORK}/${prefix}.cc" text)
  string(REGEX MATCH "kCommit\\[\\] = \"([^\"]*)\"" _ "${text}")
  set(${prefix}_commit "${CMAKE_MATCH_1}" PARENT_SCOPE)
  string(REGEX MATCH "kClean = (true|false)" _ "${text}")
  set(${prefix}_clean "${CMAKE_MATCH_1}" PARENT_SCOPE)
  string(REGEX MATCH "kDiffHash\\[\\] = \"([^\"]*)\"" _ "${text}")
  set(${prefix}_hash "${CMAKE_MATCH_1}" PARENT_SCOPE)
endfunction()

function(expect what actual expected)
  if(NOT "${actual}" STREQUAL "${expected}")
    message(FATAL_ERROR "${what}: got '${actual}', expected '${expected}'")
  endif()
endfunction()

# Not a git checkout.
capture(tarball "${WORK}/tree")
expect("a tree without .git: commit" "${tarball_commit}" "unknown")
expect("a tree without .git: clean" "${tarball_clean}" "false")

set(tree "${WORK}/tree")
execute_process(COMMAND ${git} init -q "${tree}" RESULT_VARIABLE status)
expect("git init" "${status}" "0")
file(WRITE "${tree}/a.txt" "one\n")
file(WRITE "${tree}/.gitignore" "/ignored\n")
execute_process(COMMAND ${git} -C "${tree}" add a.txt .gitignore)
execute_process(COMMAND ${git} -C "${tree}" commit -q -m fixture RESULT_VARIABLE status)
expect("git commit" "${status}" "0")
execute_process(COMMAND ${git} -C "${tree}" rev-parse HEAD OUTPUT_VARIABLE head
                OUTPUT_STRIP_TRAILING_WHITESPACE)

capture(clean "${tree}")
expect("a clean tree: commit" "${clean_commit}" "${head}")
expect("a clean tree: clean" "${clean_clean}" "true")
expect("a clean tree: diff hash" "${clean_hash}" "")

file(WRITE "${tree}/ignored" "anything\n")
capture(ignored "${tree}")
expect("an ignored file: clean" "${ignored_clean}" "true")

file(WRITE "${tree}/a.txt" "two\n")
capture(edited "${tree}")
expect("an edited tree: clean" "${edited_clean}" "false")
expect("an edited tree: commit" "${edited_commit}" "${head}")
string(LENGTH "${edited_hash}" length)
expect("an edited tree: diff hash length" "${length}" "16")
capture(again "${tree}")
expect("the same change: the same hash" "${again_hash}" "${edited_hash}")

file(WRITE "${tree}/new.txt" "new\n")
capture(untracked "${tree}")
expect("an untracked file: clean" "${untracked_clean}" "false")
if(untracked_hash STREQUAL edited_hash)
  message(FATAL_ERROR "an untracked file did not change the diff hash")
endif()

file(WRITE "${tree}/a.txt" "one\n")
capture(only_untracked "${tree}")
expect("only an untracked file: clean" "${only_untracked_clean}" "false")
file(REMOVE "${tree}/new.txt")
capture(restored "${tree}")
expect("the tree restored: clean" "${restored_clean}" "true")

# Sources unpacked inside another checkout are not that checkout's commit.
file(MAKE_DIRECTORY "${tree}/inner")
file(WRITE "${tree}/.gitignore" "/ignored\n/inner/\n")
capture(nested "${tree}/inner")
expect("a tree inside another checkout: commit" "${nested_commit}" "unknown")
