/* The SPIR-V modules compiled from shaders/ and embedded in libkiln (the table is generated
 * at build time by cmake/vulkan_embed_spirv.cmake, sorted by name). */
#ifndef KILN_VK_SHADERS_H
#define KILN_VK_SHADERS_H

#include <stddef.h>
#include <stdint.h>

typedef struct kiln_vk_shader {
    const char *name; /* file name without .comp, or a variant name from shaders/variants.txt */
    const uint32_t *code;
    size_t words;
} kiln_vk_shader;

extern const kiln_vk_shader kiln_vk_shaders[];
extern const size_t kiln_vk_shader_count;

/* The module called `name`, or NULL when this build lacks it. */
const kiln_vk_shader *vk_shader_find(const char *name);

#endif
