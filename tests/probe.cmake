# tests/test_probe.c (kiln/probe.h: device ceilings and timers) on every GPU backend built;
# tests/CMakeLists.txt registers it for cpu. Vulkan runs under the validation layer like
# every Vulkan test (in the sanitizer build vulkan.cmake strips the layer from every test
# labelled vulkan); OpenCL gets CK_FORK=no from opencl.cmake (label opencl).
if(KILN_VULKAN)
  add_test(NAME test_probe_vulkan COMMAND test_probe --backend vulkan)
  set_tests_properties(test_probe_vulkan PROPERTIES LABELS vulkan SKIP_RETURN_CODE 77 TIMEOUT 600
    ENVIRONMENT "VK_INSTANCE_LAYERS=VK_LAYER_KHRONOS_validation;KILN_VK_VALIDATION=fail")
endif()
if(KILN_OPENCL)
  add_test(NAME test_probe_opencl COMMAND test_probe --backend opencl)
  set_tests_properties(test_probe_opencl PROPERTIES LABELS opencl SKIP_RETURN_CODE 77 TIMEOUT 600)
endif()
