/* The SPIR-V modules compiled from shaders/ and embedded in libkiln, and the interface each
 * one declares. The tables are generated at build time from shaders/<name>.comp and
 * shaders/variants.txt (cmake/vulkan_backend.cmake, cmake/vulkan_embed_spirv.cmake): a
 * module is named by its id, VK_SHADER_<name>, never looked up by name when it runs.
 *
 * This header needs no Vulkan headers, so that tests can check the tables without a
 * device (tests/test_vulkan_abi.c). */
#ifndef KILN_VK_SHADERS_H
#define KILN_VK_SHADERS_H

#include <stddef.h>
#include <stdint.h>

#include "kiln/types.h"
#include "vk_shader_ids.h"

typedef struct kiln_vk_shader {
    const char *name; /* file name without .comp, or a variant name from shaders/variants.txt */
    const uint32_t *code; /* NULL when this build lacks the module (gemm_coopmat, see cmake) */
    size_t words;
} kiln_vk_shader;

/* Every module, indexed by vk_shader_id. */
extern const kiln_vk_shader kiln_vk_shaders[VK_SHADER_COUNT];
/* The builds of each kernel: kiln_vk_variants[kernel][f16][no_subgroup] is the module for
 * f16 data (1) or f32 (0), built without subgroup operations (1) or with them (0);
 * VK_SHADER_NONE where the kernel has no such build. Rows of kernels (the plain build of
 * each shaders/<name>.comp) only: [k][0][0] is k itself. */
extern const vk_shader_id kiln_vk_variants[VK_SHADER_COUNT][2][2];

/* What a module declares to the host, reflected from its SPIR-V (vk_spirv.c). */
typedef struct vk_spirv_interface {
    int bindings;        /* buffers bound, at bindings 0 .. bindings - 1 of set 0 */
    uint32_t texel_mask; /* which of them are uniform texel buffers (the rest: storage) */
    int push_operands;   /* the length of off[], its push block's first member (push.h) */
} vk_spirv_interface;

/* Reflects `words` words of SPIR-V: KILN_ERR_STATE, naming the module, when the module is
 * malformed or binds its buffers in a way vk_dispatch cannot serve (another descriptor set,
 * gaps between bindings, a binding both texel and storage buffer, no push block). */
kiln_status vk_spirv_reflect(const char *name, const uint32_t *code, size_t words, vk_spirv_interface *out);
/* vk_spirv_reflect, and KILN_ERR_STATE unless the module binds as many buffers as its push
 * block has operand offsets (push.h's <KERNEL>_OPS), at most `max_operands`. */
kiln_status vk_spirv_check(const char *name, const uint32_t *code, size_t words, int max_operands,
                           vk_spirv_interface *out);

/* Reflects and checks (vk_spirv_check) every module of this build, once per process: the
 * first Vulkan device open calls it. */
void vk_shaders_reflect(void);
/* KILN_OK when every module of this build passed that check, else the first failure. */
kiln_status vk_shaders_check(void);
/* The interface of a module of this build that passed its check. */
const vk_spirv_interface *vk_shader_interface(vk_shader_id id);
/* KILN_OK when a launch of `id` with `n_ops` operands, the texel buffers among them in
 * `texel_mask`, matches what the module binds; else KILN_ERR_ARGUMENT naming the shader
 * (a host bug, like a push block of the wrong size). The module's own failed check
 * (KILN_ERR_STATE), and KILN_ERR_UNSUPPORTED when this build lacks the module. */
kiln_status vk_shader_check_launch(vk_shader_id id, int n_ops, uint32_t texel_mask);
/* 1 when this build has the module (only gemm_coopmat may be missing). */
static inline int vk_shader_built(vk_shader_id id) { return id < VK_SHADER_COUNT && kiln_vk_shaders[id].code != NULL; }

#endif
