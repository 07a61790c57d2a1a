# Vulkan test registrations (included by tests/CMakeLists.txt).
#
#   label vulkan   every op test, test_loss_scale and test_probe on Vulkan; the devices,
#                  memory and GEMM slot (test_gpu_*.c as test_vulkan_*) and Vulkan's own
#                  tests (test_vulkan_*.c: the f16 kernel variants, the pipeline cache, ...);
#                  every test_op_*, test_vulkan_gemm and test_vulkan_f16 again in
#                  KILN_VK_MIN_LIMITS=1 mode (Vulkan's minimum limits, no optional feature:
#                  the fallback kernels, and f16 refused with a clear error); the errors for
#                  a missing device or driver, from the library and the `kiln` program;
#                  the kernels that split tensors larger than one binding, with the binding
#                  lowered to a few KiB (KILN_VK_MAX_BINDING), and a whole GPT trained at 1 MiB
#                  (test_vulkan_gpt_split); test_op_quant with the GPUs' mapping of the
#                  quantized products forced (KILN_VK_QMATMUL_LANES).
# Every Vulkan run has the validation layer (with synchronization validation) on and fails
# on any message (KILN_VK_VALIDATION=fail; see engine/vulkan/vk_instance.c).
if(NOT KILN_VULKAN)
  return()
endif()

set(KILN_VK_VALIDATE "VK_INSTANCE_LAYERS=VK_LAYER_KHRONOS_validation;KILN_VK_VALIDATION=fail")
# The sanitizer build checks kiln's memory. The validation layer leaks on its own, in code
# that LeakSanitizer can no longer name once the loader has unloaded it (so lsan.supp cannot
# suppress it): validation runs in the regular build, and the sanitizer build runs without
# the layer (see kiln_vulkan_no_layers_under_sanitizers below).
if(KILN_SANITIZE)
  set(KILN_VK_VALIDATE "KILN_VK_SANITIZER_BUILD=1")
endif()

kiln_backend_tests(vulkan ENV ${KILN_VK_VALIDATE})
# one process per test program, not one per test (tests/CMakeLists.txt, kiln_no_fork)
cmake_language(DEFER CALL kiln_no_fork vulkan)

# In the sanitizer build, no test labelled vulkan loads the validation layer, including
# those registered elsewhere (host.cmake): deferred to the end of this directory so that
# files included after this one are covered too.
function(kiln_vulkan_no_layers_under_sanitizers)
  get_property(tests DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR} PROPERTY TESTS)
  foreach(t ${tests})
    get_test_property(${t} LABELS labels)
    get_test_property(${t} ENVIRONMENT env)
    if(labels AND "vulkan" IN_LIST labels AND env)
      list(FILTER env EXCLUDE REGEX "^(VK_INSTANCE_LAYERS|KILN_VK_VALIDATION)=")
      set_tests_properties(${t} PROPERTIES ENVIRONMENT "${env}")
    endif()
  endforeach()
endfunction()
if(KILN_SANITIZE)
  cmake_language(DEFER CALL kiln_vulkan_no_layers_under_sanitizers)
endif()

# a whole GPT beyond one binding, against the CPU: it needs the host's GPT library
target_link_libraries(test_vulkan_gpt_split PRIVATE kiln_model)

# Vulkan's minimum limits
foreach(stem ${KILN_OP_TESTS} test_vulkan_gemm test_vulkan_f16)
  kiln_backend_test(${stem}_vulkan_min_limits ${stem} vulkan ENV KILN_VK_MIN_LIMITS=1 ${KILN_VK_VALIDATE})
endforeach()

# the quantized products' GPU mapping (several invocations per weight row, their partial
# sums added in shared memory: vk_qmatmul_shape), which lavapipe would not otherwise run:
# 4 lanes per row on the int8 path (lanes with two blocks, fewer lanes than x rows), 32 on
# the f32 path in minimum-limits mode (idle lanes, more lanes than x rows)
kiln_backend_test(test_op_quant_vulkan_lanes test_op_quant vulkan ENV KILN_VK_QMATMUL_LANES=4 ${KILN_VK_VALIDATE})
kiln_backend_test(test_op_quant_vulkan_min_limits_lanes test_op_quant vulkan
  ENV KILN_VK_MIN_LIMITS=1 KILN_VK_QMATMUL_LANES=32 ${KILN_VK_VALIDATE})
# and the products on random block bytes (every format's bit patterns) in the same modes
kiln_backend_test(test_vulkan_qmatmul_min_limits test_vulkan_qmatmul vulkan ENV KILN_VK_MIN_LIMITS=1 ${KILN_VK_VALIDATE})
kiln_backend_test(test_vulkan_qmatmul_lanes test_vulkan_qmatmul vulkan ENV KILN_VK_QMATMUL_LANES=4 ${KILN_VK_VALIDATE})
kiln_backend_test(test_vulkan_qmatmul_min_limits_lanes test_vulkan_qmatmul vulkan
  ENV KILN_VK_MIN_LIMITS=1 KILN_VK_QMATMUL_LANES=32 ${KILN_VK_VALIDATE})

# tensors larger than one binding: the kernels that split their work (vk_split.c,
# vk_embedding.c, vk_gemm_split.c, vk_rope.c) with the binding lowered to a few KiB, so that the cases'
# tensors span many bindings; and the memory tests with a 256 MiB heap to run out of
# (64 KiB for the GEMM, whose 256^3 case would otherwise run as a thousand products; 16 KiB
# for the softmax, whose largest case has 8.4 KB slabs: it splits heads, never a slab)
foreach(stem test_vulkan_gemm test_op_embedding test_op_optim test_op_activation test_op_reduce test_loss_scale
             test_op_cross_entropy test_op_softmax test_op_rope)
  set(binding 4096)
  if(stem STREQUAL "test_vulkan_gemm")
    set(binding 65536)
  elseif(stem STREQUAL "test_op_softmax")
    set(binding 16384)
  endif()
  kiln_backend_test(${stem}_vulkan_split ${stem} vulkan ENV KILN_VK_MAX_BINDING=${binding} ${KILN_VK_VALIDATE})
endforeach()
set_tests_properties(test_vulkan_memory PROPERTIES
  ENVIRONMENT "KILN_VK_MAX_BINDING=65536;KILN_VK_HEAP_BUDGET=268435456;${KILN_VK_VALIDATE}")

# no driver at all: the loader finds no ICD (older loaders read VK_ICD_FILENAMES, newer
# ones VK_DRIVER_FILES)
kiln_backend_error_tests(vulkan DEVICE 7 NO_DRIVER no_driver ERROR "no Vulkan driver found"
  HIDE VK_ICD_FILENAMES=/nonexistent VK_DRIVER_FILES=/nonexistent)
