/* Opening one Vulkan device: the queue, the optional features kiln enables, and the
 * device class that picks kernel variants. */
#include <stdio.h>
#include <string.h>

#include "vk_internal.h"

#ifndef VK_KHR_cooperative_matrix
#define KILN_COOPMAT_EXT "VK_KHR_cooperative_matrix"
#define KILN_STYPE_COOPMAT_FEATURES ((VkStructureType)1000506000)
typedef struct kiln_coopmat_enable {
    VkStructureType sType;
    void *pNext;
    VkBool32 cooperativeMatrix, cooperativeMatrixRobustBufferAccess;
} kiln_coopmat_enable;
#else
#define KILN_COOPMAT_EXT VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME
#define KILN_STYPE_COOPMAT_FEATURES VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR
typedef VkPhysicalDeviceCooperativeMatrixFeaturesKHR kiln_coopmat_enable;
#endif

kiln_status vk_device_create(vk_dev *d, VkInstance inst, const vk_physical *phys) {
    d->instance = inst;
    d->phys = *phys;
    d->caps = phys->caps;
    if (!vk_shader_built(VK_SHADER_gemm_coopmat)) d->caps.coopmat = 0; /* see cmake/vulkan_backend.cmake */
    d->dclass = phys->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU ? VK_CLASS_CPU : VK_CLASS_GPU;
    snprintf(d->name, sizeof d->name, "%s (%s)%s", phys->props.deviceName, phys->driver_name,
             vk_min_limits_mode() ? " [minimum limits]" : "");

    float priority = 1.0f;
    VkDeviceQueueCreateInfo qci = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
    qci.queueFamilyIndex = phys->queue_family;
    qci.queueCount = 1;
    qci.pQueuePriorities = &priority;

    const char *exts[5];
    uint32_t n_exts = 0;
    VkPhysicalDeviceFeatures2 feats = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    VkPhysicalDevice16BitStorageFeatures s16 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES};
    VkPhysicalDeviceShaderFloat16Int8Features f16 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES};
    VkPhysicalDeviceShaderIntegerDotProductFeatures idot = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES};
    kiln_coopmat_enable cm;
    memset(&cm, 0, sizeof cm);
    cm.sType = KILN_STYPE_COOPMAT_FEATURES;
    void **tail = &feats.pNext;
    /* 16-bit storage, when the device has it (not in minimum-limits mode), for the kernels'
     * f16 variants and the cooperative-matrix GEMM's f16 tiles. Without it kiln reports no
     * f16 support (supports_f16) and every kernel refuses f16 data (vk_require_f16), even
     * those that handle f16 as packed 32-bit words (fill, cast, check_finite, adam, the
     * GEMM's packing): one rule for the whole device. f16 arithmetic is enabled where
     * the device has it, for the cooperative-matrix GEMM and the f16 FMA probe (vk_probe.c):
     * every other kernel computes in f32. */
    if (d->caps.storage16) {
        s16.storageBuffer16BitAccess = VK_TRUE;
        *tail = &s16;
        tail = &s16.pNext;
    }
    if (d->caps.float16) { /* f16 arithmetic: the cooperative-matrix GEMM, the f16 FMA probe */
        f16.shaderFloat16 = VK_TRUE;
        *tail = &f16;
        tail = &f16.pNext;
        if (phys->props.apiVersion < VK_API_VERSION_1_2) exts[n_exts++] = VK_KHR_SHADER_FLOAT16_INT8_EXTENSION_NAME;
    }
    if (d->caps.int_dot) { /* int8 dot products: kiln_matmul_q's rounded path (vk_quant.c) */
        idot.shaderIntegerDotProduct = VK_TRUE;
        *tail = &idot;
        tail = &idot.pNext;
        exts[n_exts++] = VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME; /* listed: vk_instance.c */
    }
    if (d->caps.coopmat) { /* implies storage16 and float16 (vk_instance.c) */
        cm.cooperativeMatrix = VK_TRUE;
        *tail = &cm;
        tail = &cm.pNext;
        exts[n_exts++] = KILN_COOPMAT_EXT;
    }
    if (phys->caps.portability_subset) exts[n_exts++] = "VK_KHR_portability_subset";

    VkDeviceCreateInfo dci = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
    dci.pNext = &feats;
    dci.queueCreateInfoCount = 1;
    dci.pQueueCreateInfos = &qci;
    dci.enabledExtensionCount = n_exts;
    dci.ppEnabledExtensionNames = exts;
    VkResult r = vkCreateDevice(phys->handle, &dci, NULL, &d->device);
    if (r != VK_SUCCESS) return vk_result(r, "vulkan: vkCreateDevice");
    vkGetDeviceQueue(d->device, phys->queue_family, 0, &d->queue);
    return KILN_OK;
}

void vk_device_destroy(vk_dev *d) {
    if (d->device) vkDestroyDevice(d->device, NULL);
    d->device = VK_NULL_HANDLE;
}

/* ---- tuning by device class ----
 * A CPU device (lavapipe, SwiftShader) runs a workgroup on one thread with invocations as
 * SIMD lanes: small workgroups and many of them keep all cores busy. A GPU wants a few
 * hundred invocations per workgroup to hide memory latency. */

uint32_t vk_flat_wg(const vk_dev *d) {
    uint32_t wg = d->dclass == VK_CLASS_CPU ? 64 : 256;
    while (wg > d->caps.max_wg_invocations) wg /= 2;
    return wg;
}

/* A power of two (the shared-memory reduction tree halves it). */
uint32_t vk_row_wg(const vk_dev *d, int64_t cols) {
    uint32_t wg = d->dclass == VK_CLASS_CPU ? 32 : (cols >= 1024 ? 256 : cols >= 256 ? 128 : 64);
    while (wg > d->caps.max_wg_invocations) wg /= 2;
    return wg;
}

kiln_status vk_require_f16(const vk_dev *d, const char *kernel) {
    if (d->caps.storage16) return KILN_OK;
    return kiln_set_error(KILN_ERR_UNSUPPORTED,
                          "vulkan %s: %s has no 16-bit storage (storageBuffer16BitAccess), so it cannot run f16 "
                          "kernels; use f32 on this device",
                          kernel, d->name);
}
