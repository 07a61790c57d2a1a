# KILN_GIT_COMMIT: the commit this build is made from ("unknown" outside a git checkout),
# which `kiln bench` result files name and the device check's cache keys on. Read at
# configure time, and the configure step re-runs when HEAD moves (a commit, a checkout), so
# a rebuild never reports a stale commit.
set(KILN_GIT_COMMIT "unknown")
find_package(Git QUIET)
if(GIT_FOUND AND EXISTS ${PROJECT_SOURCE_DIR}/.git)
  execute_process(COMMAND ${GIT_EXECUTABLE} rev-parse HEAD
    WORKING_DIRECTORY ${PROJECT_SOURCE_DIR} OUTPUT_VARIABLE _kiln_commit
    RESULT_VARIABLE _kiln_git_rc OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(_kiln_git_rc EQUAL 0)
    set(KILN_GIT_COMMIT ${_kiln_commit})
  endif()
  execute_process(COMMAND ${GIT_EXECUTABLE} rev-parse --symbolic-full-name HEAD
    WORKING_DIRECTORY ${PROJECT_SOURCE_DIR} OUTPUT_VARIABLE _kiln_ref
    RESULT_VARIABLE _kiln_git_rc OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  # HEAD's and the branch's files where git keeps them: in a worktree .git is a file and
  # HEAD lives under the main checkout's .git/worktrees/, the branches in its common folder
  set(_kiln_watch HEAD)
  if(_kiln_git_rc EQUAL 0 AND _kiln_ref MATCHES "^refs/")
    list(APPEND _kiln_watch ${_kiln_ref})
  endif()
  foreach(_kiln_name ${_kiln_watch})
    execute_process(COMMAND ${GIT_EXECUTABLE} rev-parse --git-path ${_kiln_name}
      WORKING_DIRECTORY ${PROJECT_SOURCE_DIR} OUTPUT_VARIABLE _kiln_file
      RESULT_VARIABLE _kiln_git_rc OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    if(_kiln_git_rc EQUAL 0)
      get_filename_component(_kiln_file ${_kiln_file} ABSOLUTE BASE_DIR ${PROJECT_SOURCE_DIR})
      if(EXISTS ${_kiln_file})
        set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${_kiln_file})
      endif()
    endif()
  endforeach()
endif()
