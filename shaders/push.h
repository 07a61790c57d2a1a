/* Push-constant layouts, shared by the shaders (GLSL) and engine/vulkan (C).
 *
 * Each kernel's block starts with one element offset per operand (binding), filled in by
 * vk_dispatch: operands are addressed as block + offset, and an absent optional operand
 * has offset KILN_ABSENT. All fields are 32-bit, so the C struct and the GLSL block
 * (std430 push-constant layout) agree; the whole block fits the 128-byte minimum.
 *
 * The kernel slots' push blocks are declared in engine/core/kernel_slots.def (KILN_VK_PUSH,
 * after the module's operands) and generated into kernel_push.h, included below: a block
 * <KERNEL>_PUSH is `u32 off[<KERNEL>_OPS];` then its fields, and <KERNEL>_OPS is the
 * module's declared operand count. It sizes off[] on both sides, the host passes it as
 * vk_launch.n_ops (VK_OPS), and the shader binds exactly that many buffers, 0 ..
 * <KERNEL>_OPS - 1: cmake/kernel_slots.cmake checks the bindings against the declaration at
 * configure time, and the backend the SPIR-V when it starts (vk_shaders.c reflects every
 * embedded module); vk_dispatch refuses each launch of a module that failed, and a launch
 * whose n_ops differs from what its shader binds. The blocks below are those the
 * declaration cannot state: embed_bwd's per-build blocks and the device probes'. */
#ifndef KILN_PUSH_H
#define KILN_PUSH_H

#if defined(VULKAN)
#define u32 uint
#define i32 int
#define f32 float
#else
#include <stdint.h>
typedef uint32_t u32;
typedef int32_t i32;
typedef float f32;
#endif

#define KILN_ABSENT 0xffffffffu

/* The kernels whose builds take different push blocks stay here: embed_bwd's f32 build
 * (ids, dout, dtable; the table window v0 .. v0 + vn - 1 as embed_fwd's) and its f16 build,
 * which binds the two more operands kernel_slots.def declares. */
#define EMBED_BWD_OPS 3
#define EMBED_BWD_PUSH u32 off[EMBED_BWD_OPS]; u32 rows; u32 vocab; u32 dim; u32 v0; u32 vn;

/* embedding backward in f16 (embed_bwd_f16): ids, dout, dtable, owner (i32 [vocab]), acc
 * (f32 [rows][cols] for columns c0 .. c0 + cols - 1). phase KILN_ABI_VK_EMBED_BWD_ADD: add
 * positions r0 .. r0 + rn - 1 (dout holds their rows) into acc; KILN_ABI_VK_EMBED_BWD_STORE:
 * round acc into dtable. */
#define EMBED_BWD_F16_OPS 5
#define EMBED_BWD_F16_PUSH u32 off[EMBED_BWD_F16_OPS]; u32 rows; u32 vocab; u32 dim; u32 c0; u32 cols; u32 v0; u32 vn; u32 r0; u32 rn; u32 phase;

/* The push blocks that engine/core/kernel_slots.def declares (KILN_VK_PUSH), generated
 * by cmake/kernel_slots.cmake. */
#include "kernel_push.h"

/* fma_peak (benchmark): out */
#define FMA_PEAK_OPS 1
#define FMA_PEAK_PUSH u32 off[FMA_PEAK_OPS]; u32 iters; u32 n;

#endif
