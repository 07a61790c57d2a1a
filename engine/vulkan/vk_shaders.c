/* The embedded modules as the host uses them: each one's interface, reflected and checked
 * once when the first device opens, every launch checked against it, and the build of a
 * kernel that suits a device and dtype (the builds core/kernel_slots.def declares, through
 * the generated kiln_vk_variants).
 *
 * Why check again at run time: core/kernel_slots.def declares each slot kernel's operands,
 * and the build compares that with the shader's layout(binding = i) declarations, but the
 * compiled module is what runs: a probe module the declaration does not cover, or a launch
 * that fills vk_launch.ops[] short, would bind the wrong buffers or leave a binding the
 * shader reads unwritten, and show up as wrong numbers or a validation message on some
 * device; here it is one error naming the shader.
 *
 * A module that fails its check does not stop the device from opening: each launch of it
 * fails with the check's error instead. So the tests of that kernel fail, where a refused
 * open would make every Vulkan test skip as if there were no device. */
#include <pthread.h>

#include "vk_internal.h"
#include "vk_shaders.h"

/* Filled once per process by check_every_module (pthread_once: any thread may open the
 * first device), read-only after that. A failed module keeps only its status: the check
 * runs again to say why when it is needed (the message is per thread, kiln_set_error). */
static pthread_once_t g_checked = PTHREAD_ONCE_INIT;
static vk_spirv_interface g_interfaces[VK_SHADER_COUNT];
static kiln_status g_statuses[VK_SHADER_COUNT];

static void check_every_module(void) {
    for (int id = 0; id < VK_SHADER_COUNT; id++) {
        const kiln_vk_shader *sh = &kiln_vk_shaders[id];
        if (sh->code)
            g_statuses[id] = vk_spirv_check(sh->name, sh->code, sh->words, VK_MAX_OPERANDS, &g_interfaces[id]);
    }
}

/* The check of one module of this build, with its message when it failed. */
static kiln_status module_status(vk_shader_id id) {
    pthread_once(&g_checked, check_every_module);
    if (!g_statuses[id]) return KILN_OK;
    const kiln_vk_shader *sh = &kiln_vk_shaders[id];
    vk_spirv_interface again;
    return vk_spirv_check(sh->name, sh->code, sh->words, VK_MAX_OPERANDS, &again);
}

void vk_shaders_reflect(void) { pthread_once(&g_checked, check_every_module); }

kiln_status vk_shaders_check(void) {
    for (int id = 0; id < VK_SHADER_COUNT; id++) {
        kiln_status s = vk_shader_built((vk_shader_id)id) ? module_status((vk_shader_id)id) : KILN_OK;
        if (s) return s;
    }
    return KILN_OK;
}

const vk_spirv_interface *vk_shader_interface(vk_shader_id id) {
    vk_shaders_reflect();
    return &g_interfaces[id];
}

kiln_status vk_shader_check_launch(vk_shader_id id, int n_ops, uint32_t texel_mask) {
    if (id >= VK_SHADER_COUNT) return kiln_set_error(KILN_ERR_ARGUMENT, "vulkan: no shader has id %d", (int)id);
    const char *name = kiln_vk_shaders[id].name;
    if (!vk_shader_built(id))
        return kiln_set_error(KILN_ERR_UNSUPPORTED, "vulkan: shader '%s' is not in this build", name);
    kiln_status s = module_status(id);
    if (s) return s;
    const vk_spirv_interface *in = &g_interfaces[id];
    if (n_ops != in->bindings)
        return kiln_set_error(KILN_ERR_ARGUMENT,
                              "vulkan: %s: the launch passes %d operands but the shader binds %d "
                              "(core/kernel_slots.def declares the count)",
                              name, n_ops, in->bindings);
    for (int i = 0; i < n_ops; i++) {
        int texel = (texel_mask >> i) & 1, declared = (in->texel_mask >> i) & 1;
        if (texel != declared)
            return kiln_set_error(KILN_ERR_ARGUMENT,
                                  "vulkan: %s: operand %d is passed as a %s buffer but the shader "
                                  "declares a %s buffer",
                                  name, i, texel ? "texel" : "storage", declared ? "texel" : "storage");
    }
    return KILN_OK;
}

kiln_status vk_variant(const vk_dev *d, vk_shader_id kernel, kiln_dtype dtype, vk_shader_id *out) {
    const char *name = kiln_vk_shaders[kernel].name;
    if (dtype != KILN_F32 && dtype != KILN_F16)
        return kiln_set_error(KILN_ERR_DTYPE, "vulkan %s: data must be f32 or f16, got %s", name,
                              kiln_dtype_name(dtype));
    int f16 = dtype == KILN_F16;
    kiln_status s = f16 ? vk_require_f16(d, name) : KILN_OK;
    if (s) return s;
    const vk_shader_id *builds = kiln_vk_variants[kernel][f16];
    /* without subgroup arithmetic, the build that reduces through shared memory, where the
     * kernel reduces at all (has one) */
    vk_shader_id id = !d->caps.subgroup_arith && builds[1] != VK_SHADER_NONE ? builds[1] : builds[0];
    if (id == VK_SHADER_NONE)
        return kiln_set_error(KILN_ERR_UNSUPPORTED, "vulkan %s: no %s build of this kernel (core/kernel_slots.def)",
                              name, kiln_dtype_name(dtype));
    *out = id;
    return KILN_OK;
}
