# The check of engine/core/kernel_slots.def against the kernels' sources fails on a
# mismatch, with one line naming the kernel and the operand: on a copy of the sources, two
# bindings of axpby.comp swapped, then two parameters of softmax_fwd in cl/softmax.cl.
#   cmake -DSRC=<source tree> -DWORK=<scratch folder> -P kernel_slots_mismatch.cmake
# (tests/kernel_slots.cmake registers it). With -DONE=1 it only runs the check on WORK.
cmake_minimum_required(VERSION 3.25)
if(ONE)
  set(PROJECT_SOURCE_DIR ${WORK})
  set(PROJECT_BINARY_DIR ${WORK}/build)
  include(${SRC}/cmake/kernel_slots.cmake)
  return()
endif()

# Runs the check on WORK: passes when it fails with `expect` in its message (or succeeds
# when expect is "").
function(check what expect)
  execute_process(COMMAND ${CMAKE_COMMAND} -DONE=1 -DSRC=${SRC} -DWORK=${WORK} -P ${CMAKE_CURRENT_LIST_FILE}
                  RESULT_VARIABLE rc ERROR_VARIABLE err OUTPUT_QUIET)
  string(REGEX REPLACE "[ \n]+" " " err "${err}")
  if(expect STREQUAL "")
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "${what}: the check failed on the intact sources: ${err}")
    endif()
  elseif(rc EQUAL 0)
    message(FATAL_ERROR "${what}: the check passed; expected it to fail with: ${expect}")
  else()
    string(FIND "${err}" "${expect}" at)
    if(at LESS 0)
      message(FATAL_ERROR "${what}: expected `${expect}` in the check's message, got: ${err}")
    endif()
  endif()
endfunction()

# WORK's copy of `file` with `from` replaced by `to`.
function(edit file from to)
  file(READ ${WORK}/${file} text)
  string(FIND "${text}" "${from}" at)
  if(at LESS 0)
    message(FATAL_ERROR "${file} no longer holds `${from}`: update this test")
  endif()
  string(REPLACE "${from}" "${to}" text "${text}")
  file(WRITE ${WORK}/${file} "${text}")
endfunction()

file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK}/engine/core)
file(COPY ${SRC}/shaders ${SRC}/cl DESTINATION ${WORK})
file(COPY ${SRC}/engine/core/kernel_slots.def DESTINATION ${WORK}/engine/core)
check("intact sources" "")

edit(shaders/axpby.comp "binding = 2) readonly buffer Num" "binding = 3) readonly buffer Num")
edit(shaders/axpby.comp "binding = 3) readonly buffer Den" "binding = 2) readonly buffer Den")
check("axpby.comp with num and den swapped"
      "kernel_slots.def: Vulkan kernel axpby (slot axpby): operand 2 is num but shaders/axpby.comp binds den at binding 2")
file(COPY ${SRC}/shaders/axpby.comp DESTINATION ${WORK}/shaders)

edit(cl/softmax.cl "void softmax_fwd(const __global real_t *x, ulong x_off, const __global real_t *add, ulong add_off,"
                   "void softmax_fwd(const __global real_t *add, ulong add_off, const __global real_t *x, ulong x_off,")
check("cl/softmax.cl with x and add swapped"
      "kernel_slots.def: OpenCL kernel softmax_fwd (slot softmax_fwd): operand 0 is x but buffer parameter 0 of softmax_fwd in cl/softmax.cl is add")
file(REMOVE_RECURSE ${WORK})
