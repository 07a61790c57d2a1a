# Dynamic loss scaling (tests/test_loss_scale.c): registered for cpu by the glob in
# tests/CMakeLists.txt; the device flag, the check over f16/f32 gradients and the skip
# inside the Adam kernel also run on every GPU backend built here.
if(KILN_VULKAN)
  add_test(NAME test_loss_scale_vulkan COMMAND test_loss_scale --backend vulkan)
  set_tests_properties(test_loss_scale_vulkan PROPERTIES LABELS vulkan SKIP_RETURN_CODE 77 TIMEOUT 300
    ENVIRONMENT "VK_INSTANCE_LAYERS=VK_LAYER_KHRONOS_validation;KILN_VK_VALIDATION=fail")
endif()
if(KILN_OPENCL)
  add_test(NAME test_loss_scale_opencl COMMAND test_loss_scale --backend opencl)
  set_tests_properties(test_loss_scale_opencl PROPERTIES LABELS opencl SKIP_RETURN_CODE 77 TIMEOUT 300)
endif()
