# Vulkan-specific test registrations (included by tests/CMakeLists.txt).
#
#   label vulkan   test_vulkan_*.c (devices, memory, the GEMM slot, the f16 kernel variants,
#                  the pipeline cache); every test_op_*, test_vulkan_gemm and test_vulkan_f16
#                  again in KILN_VK_MIN_LIMITS=1 mode (Vulkan's minimum limits, no optional
#                  feature: the fallback kernels, and f16 refused with a clear error);
#                  the `kiln` program's one-line errors for a missing device or driver;
#                  the kernels that split tensors larger than one binding, with the binding
#                  lowered to a few KiB (KILN_VK_MAX_BINDING), and a whole GPT trained at 1 MiB
#                  (test_vulkan_gpt_split).
# Every Vulkan run has the validation layer (with synchronization validation) on and fails
# on any message (KILN_VK_VALIDATION=fail; see engine/vulkan/vk_instance.c).

if(CMAKE_SCRIPT_MODE_FILE)
  # ---- `kiln` must fail with exactly one line on stderr matching EXPECT:
  #      cmake -DCLI=<kiln> "-DARGS=..." -DEXPECT=regex -P vulkan.cmake ----
  execute_process(COMMAND ${CLI} ${ARGS} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  string(STRIP "${err}" err)
  if(rc EQUAL 0)
    message(FATAL_ERROR "kiln ${ARGS} succeeded; expected an error")
  endif()
  if(err MATCHES "\n" OR NOT err MATCHES "${EXPECT}")
    message(FATAL_ERROR "kiln ${ARGS}: expected one line matching '${EXPECT}' on stderr, got:\n${err}")
  endif()
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

foreach(src ${KILN_TEST_SOURCES})
  get_filename_component(name ${src} NAME_WE)
  if(name MATCHES "^test_vulkan_")
    if(KILN_VULKAN)
      target_compile_definitions(${name} PRIVATE KILN_HAVE_VULKAN)
      set_tests_properties(${name} PROPERTIES LABELS vulkan ENVIRONMENT "${KILN_VK_VALIDATE}")
    endif()
  endif()
endforeach()

# In the sanitizer build, no test labelled vulkan loads the validation layer, including
# those registered elsewhere (tests/CMakeLists.txt, host.cmake): deferred to the end of this
# directory so that files included after this one are covered too.
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
if(KILN_VULKAN AND KILN_SANITIZE)
  cmake_language(DEFER CALL kiln_vulkan_no_layers_under_sanitizers)
endif()

if(KILN_VULKAN)
  # a whole GPT beyond one binding, against the CPU: it needs the host's GPT library
  target_link_libraries(test_vulkan_gpt_split PRIVATE kiln_model)

  foreach(src ${KILN_TEST_SOURCES})
    get_filename_component(name ${src} NAME_WE)
    if(name MATCHES "^test_op_" OR name STREQUAL "test_vulkan_gemm" OR name STREQUAL "test_vulkan_f16")
      add_test(NAME ${name}_vulkan_min_limits COMMAND ${name} --backend vulkan)
      set_tests_properties(${name}_vulkan_min_limits PROPERTIES LABELS vulkan SKIP_RETURN_CODE 77 TIMEOUT 600
        ENVIRONMENT "KILN_VK_MIN_LIMITS=1;${KILN_VK_VALIDATE}")
    endif()
  endforeach()

  # tensors larger than one binding: the kernels that split their work (vk_split.c,
  # vk_embed.c, vk_gemm_split.c) with the binding lowered to a few KiB, so that the cases'
  # tensors span many bindings; and the memory tests with a 256 MiB heap to run out of
  # (64 KiB for the GEMM, whose 256^3 case would otherwise run as a thousand products; 16 KiB
  # for the softmax, whose largest case has 8.4 KB slabs: it splits heads, never a slab)
  foreach(name test_vulkan_gemm test_op_embedding test_op_optim test_op_activation test_op_reduce test_loss_scale
               test_op_xent test_op_softmax)
    set(binding 4096)
    if(name STREQUAL "test_vulkan_gemm")
      set(binding 65536)
    elseif(name STREQUAL "test_op_softmax")
      set(binding 16384)
    endif()
    add_test(NAME ${name}_vulkan_split COMMAND ${name} --backend vulkan)
    set_tests_properties(${name}_vulkan_split PROPERTIES LABELS vulkan SKIP_RETURN_CODE 77 TIMEOUT 600
      ENVIRONMENT "KILN_VK_MAX_BINDING=${binding};${KILN_VK_VALIDATE}")
  endforeach()
  set_tests_properties(test_vulkan_memory PROPERTIES
    ENVIRONMENT "KILN_VK_MAX_BINDING=65536;KILN_VK_HEAP_BUDGET=268435456;${KILN_VK_VALIDATE}")

  # no driver at all: the loader finds no ICD (older loaders read VK_ICD_FILENAMES, newer
  # ones VK_DRIVER_FILES)
  add_test(NAME test_vulkan_device_no_driver COMMAND test_vulkan_device --expect-no-driver)
  set_tests_properties(test_vulkan_device_no_driver PROPERTIES LABELS vulkan
    ENVIRONMENT "VK_ICD_FILENAMES=/nonexistent;VK_DRIVER_FILES=/nonexistent")

  # the `kiln` program: a missing device or driver is one line on stderr and exit 1
  if(TARGET kiln_host)
    add_test(NAME kiln_vulkan_missing_device
      COMMAND ${CMAKE_COMMAND} -DCLI=$<TARGET_FILE:kiln_host>
              "-DARGS=bench;gemm;--backend;vulkan;--device;7;--sizes;8;--repeat;1"
              "-DEXPECT=vulkan:7 does not exist" -P ${CMAKE_CURRENT_LIST_FILE})
    add_test(NAME kiln_vulkan_no_driver
      COMMAND ${CMAKE_COMMAND} -DCLI=$<TARGET_FILE:kiln_host>
              "-DARGS=bench;gemm;--backend;vulkan;--sizes;8;--repeat;1"
              "-DEXPECT=no Vulkan driver found" -P ${CMAKE_CURRENT_LIST_FILE})
    set_tests_properties(kiln_vulkan_missing_device PROPERTIES LABELS vulkan)
    set_tests_properties(kiln_vulkan_no_driver PROPERTIES LABELS vulkan
      ENVIRONMENT "VK_ICD_FILENAMES=/nonexistent;VK_DRIVER_FILES=/nonexistent")
  endif()
endif()
