/* The Vulkan kernels' interface, checked without a device: every embedded SPIR-V module
 * binds exactly the operands its push block declares (shaders/push.h's <KERNEL>_OPS, which
 * the host passes as vk_launch.n_ops), the table of each kernel's builds follows
 * shaders/variants.txt, and a disagreement is caught: by the module check (a hand-built
 * module, a real one with a binding moved) and by the launch check vk_dispatch runs (a
 * launch with the wrong operand count or buffer kinds). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#ifdef KILN_HAVE_VULKAN
#include "../shaders/push.h"
#include "vulkan/vk_shaders.h"

#define MAX_OPERANDS 8 /* VK_MAX_OPERANDS (vk_internal.h) */

START_TEST(every_module_binds_what_its_push_block_declares) {
    ck_assert_msg(vk_shaders_check() == KILN_OK, "%s", kiln_error_message());
    int built = 0;
    for (int id = 0; id < VK_SHADER_COUNT; id++) {
        const kiln_vk_shader *sh = &kiln_vk_shaders[id];
        if (!sh->code) continue;
        built++;
        vk_spirv_interface in;
        ck_assert_msg(vk_spirv_check(sh->name, sh->code, sh->words, MAX_OPERANDS, &in) == KILN_OK, "%s",
                      kiln_error_message());
        ck_assert_msg(in.bindings >= 1 && in.bindings == in.push_operands, "%s: %d bindings, %d offsets", sh->name,
                      in.bindings, in.push_operands);
        ck_assert_msg(memcmp(&in, vk_shader_interface((vk_shader_id)id), sizeof in) == 0, "%s", sh->name);
    }
    ck_assert_int_ge(built, VK_SHADER_COUNT - 1); /* only gemm_coopmat may be left out */
    /* a few interfaces as push.h and the shaders declare them */
    ck_assert_int_eq(vk_shader_interface(VK_SHADER_norm_fwd)->bindings, NORM_FWD_OPS);
    ck_assert_int_eq(vk_shader_interface(VK_SHADER_norm_bwd_params_f16)->bindings, NORM_BWD_PARAMS_OPS);
    ck_assert_int_eq(vk_shader_interface(VK_SHADER_embed_bwd)->bindings, EMBED_BWD_OPS);
    ck_assert_int_eq(vk_shader_interface(VK_SHADER_embed_bwd_f16)->bindings, EMBED_BWD_F16_OPS);
    ck_assert_uint_eq(vk_shader_interface(VK_SHADER_norm_fwd)->texel_mask, 0);
    ck_assert_uint_eq(vk_shader_interface(VK_SHADER_gemm_pack_texel)->texel_mask, 0x1);
    ck_assert_uint_eq(vk_shader_interface(VK_SHADER_gemm_packed)->texel_mask, 0x3);
    ck_assert_uint_eq(vk_shader_interface(VK_SHADER_gemm_shuffle16)->texel_mask, 0x3);
}
END_TEST

/* kiln_vk_variants[k][f16][no_subgroup] is k's build "<k>[_shared][_f16]" or none, and every
 * such build of variants.txt is in the table. */
START_TEST(every_kernel_finds_its_builds) {
    int found = 0;
    for (int k = 0; k < VK_SHADER_COUNT; k++) {
        const vk_shader_id(*builds)[2] = kiln_vk_variants[k];
        if (builds[0][0] == VK_SHADER_NONE) {
            ck_assert_msg(builds[0][1] == VK_SHADER_NONE && builds[1][0] == VK_SHADER_NONE &&
                              builds[1][1] == VK_SHADER_NONE,
                          "%s: builds of a module that is not a kernel", kiln_vk_shaders[k].name);
            continue;
        }
        ck_assert_int_eq(builds[0][0], k);
        for (int f16 = 0; f16 < 2; f16++) {
            for (int shared = 0; shared < 2; shared++) {
                char want[96];
                snprintf(want, sizeof want, "%s%s%s", kiln_vk_shaders[k].name, shared ? "_shared" : "",
                         f16 ? "_f16" : "");
                vk_shader_id id = builds[f16][shared];
                if (id == VK_SHADER_NONE) {
                    for (int m = 0; m < VK_SHADER_COUNT; m++)
                        ck_assert_msg(strcmp(kiln_vk_shaders[m].name, want) != 0, "%s is not in %s's row", want,
                                      kiln_vk_shaders[k].name);
                    continue;
                }
                ck_assert_str_eq(kiln_vk_shaders[id].name, want);
                found++;
            }
        }
    }
    /* the norm kernels' builds, by the names the task gave them */
    ck_assert_int_eq(kiln_vk_variants[VK_SHADER_norm_fwd][1][1], VK_SHADER_norm_fwd_shared_f16);
    ck_assert_int_eq(kiln_vk_variants[VK_SHADER_norm_bwd_dx][0][1], VK_SHADER_norm_bwd_dx_shared);
    ck_assert_int_eq(kiln_vk_variants[VK_SHADER_norm_bwd_params][1][0], VK_SHADER_norm_bwd_params_f16);
    ck_assert_int_eq(kiln_vk_variants[VK_SHADER_norm_bwd_params][0][1], VK_SHADER_NONE);
    ck_assert_int_gt(found, 40);
}
END_TEST

/* ---- a hand-built module: storage buffers at bindings 0 .. n_bindings - 1, a push block
 * whose first member is u32 off[n_offsets] ---- */

typedef struct spirv {
    uint32_t words[256];
    int n;
} spirv;

static void emit(spirv *m, uint32_t op, int n, const uint32_t *operands) {
    m->words[m->n++] = ((uint32_t)(n + 1) << 16) | op;
    for (int i = 0; i < n; i++) m->words[m->n++] = operands[i];
}
#define EMIT(m, op, ...) emit(m, op, (int)(sizeof((uint32_t[]){__VA_ARGS__}) / 4), (uint32_t[]){__VA_ARGS__})

enum {
    OP_TYPE_INT = 21,
    OP_TYPE_RUNTIME_ARRAY = 29,
    OP_TYPE_ARRAY = 28,
    OP_TYPE_STRUCT = 30,
    OP_TYPE_POINTER = 32,
    OP_CONSTANT = 43,
    OP_VARIABLE = 59,
    OP_DECORATE = 71
};
enum { DEC_BLOCK = 2, DEC_BINDING = 33, DEC_DESCRIPTOR_SET = 34, SC_PUSH_CONSTANT = 9, SC_STORAGE_BUFFER = 12 };

static void build_module(spirv *m, int n_bindings, int n_offsets) {
    enum { UINT = 1, N_OFF, OFF_ARRAY, PUSH_T, PUSH_P, PUSH_VAR, RUNTIME, BUF_T, BUF_P, BUF0 };
    m->n = 0;
    uint32_t header[5] = {0x07230203, 0x00010300, 0, (uint32_t)(BUF0 + n_bindings), 0};
    memcpy(m->words, header, sizeof header);
    m->n = 5;
    EMIT(m, OP_DECORATE, PUSH_T, DEC_BLOCK);
    EMIT(m, OP_DECORATE, BUF_T, DEC_BLOCK);
    for (int b = 0; b < n_bindings; b++) {
        EMIT(m, OP_DECORATE, (uint32_t)(BUF0 + b), DEC_DESCRIPTOR_SET, 0);
        EMIT(m, OP_DECORATE, (uint32_t)(BUF0 + b), DEC_BINDING, (uint32_t)b);
    }
    EMIT(m, OP_TYPE_INT, UINT, 32, 0);
    EMIT(m, OP_CONSTANT, UINT, N_OFF, (uint32_t)n_offsets);
    EMIT(m, OP_TYPE_ARRAY, OFF_ARRAY, UINT, N_OFF);
    EMIT(m, OP_TYPE_STRUCT, PUSH_T, OFF_ARRAY, UINT);
    EMIT(m, OP_TYPE_POINTER, PUSH_P, SC_PUSH_CONSTANT, PUSH_T);
    EMIT(m, OP_VARIABLE, PUSH_P, PUSH_VAR, SC_PUSH_CONSTANT);
    EMIT(m, OP_TYPE_RUNTIME_ARRAY, RUNTIME, UINT);
    EMIT(m, OP_TYPE_STRUCT, BUF_T, RUNTIME);
    EMIT(m, OP_TYPE_POINTER, BUF_P, SC_STORAGE_BUFFER, BUF_T);
    for (int b = 0; b < n_bindings; b++) EMIT(m, OP_VARIABLE, BUF_P, (uint32_t)(BUF0 + b), SC_STORAGE_BUFFER);
}

START_TEST(a_module_that_disagrees_with_its_push_block_is_refused) {
    spirv m;
    vk_spirv_interface in;
    build_module(&m, 3, 3);
    ck_assert_msg(vk_spirv_check("hand_built", m.words, (size_t)m.n, MAX_OPERANDS, &in) == KILN_OK, "%s",
                  kiln_error_message());
    ck_assert_int_eq(in.bindings, 3);
    build_module(&m, 3, 2); /* push.h says 2 operands, the shader binds 3 */
    ck_assert_int_eq(vk_spirv_check("hand_built", m.words, (size_t)m.n, MAX_OPERANDS, &in), KILN_ERR_STATE);
    const char *msg = kiln_error_message();
    ck_assert_msg(strstr(msg, "'hand_built' binds 3 buffers but its push block has 2 operand offsets"), "%s", msg);
    build_module(&m, 9, 9); /* more than a kernel may bind */
    ck_assert_int_eq(vk_spirv_check("hand_built", m.words, (size_t)m.n, MAX_OPERANDS, &in), KILN_ERR_STATE);
    /* not SPIR-V, and a module cut short */
    uint32_t junk[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    ck_assert_int_eq(vk_spirv_check("junk", junk, 8, MAX_OPERANDS, &in), KILN_ERR_STATE);
    build_module(&m, 2, 2);
    ck_assert_int_eq(vk_spirv_check("cut", m.words, (size_t)m.n - 1, MAX_OPERANDS, &in), KILN_ERR_STATE);
}
END_TEST

/* A real module with its last binding moved one up (a gap) is refused, naming it. */
START_TEST(a_real_module_with_a_binding_moved_is_refused) {
    const kiln_vk_shader *sh = &kiln_vk_shaders[VK_SHADER_norm_fwd];
    uint32_t *code = malloc(sh->words * 4);
    ck_assert_ptr_nonnull(code);
    memcpy(code, sh->code, sh->words * 4);
    int moved = 0;
    for (size_t at = 5; at < sh->words; at += code[at] >> 16)
        if ((code[at] & 0xffff) == OP_DECORATE && code[at + 2] == DEC_BINDING && code[at + 3] == NORM_FWD_OPS - 1) {
            code[at + 3] = NORM_FWD_OPS;
            moved++;
        }
    ck_assert_int_eq(moved, 1);
    vk_spirv_interface in;
    ck_assert_int_eq(vk_spirv_check(sh->name, code, sh->words, MAX_OPERANDS, &in), KILN_ERR_STATE);
    const char *msg = kiln_error_message();
    ck_assert_msg(strstr(msg, "shader 'norm_fwd'") && strstr(msg, "binding 5 is missing"), "%s", msg);
    free(code);
}
END_TEST

/* The check vk_dispatch runs first: the operand count and kinds of a launch. */
START_TEST(a_launch_that_disagrees_with_its_shader_is_refused) {
    ck_assert_int_eq(vk_shader_check_launch(VK_SHADER_norm_fwd, NORM_FWD_OPS, 0), KILN_OK);
    ck_assert_int_eq(vk_shader_check_launch(VK_SHADER_norm_fwd, NORM_FWD_OPS - 1, 0), KILN_ERR_ARGUMENT);
    const char *msg = kiln_error_message();
    ck_assert_msg(strstr(msg, "norm_fwd: the launch passes 5 operands but the shader binds 6"), "%s", msg);
    ck_assert_int_eq(vk_shader_check_launch(VK_SHADER_gemm_packed, GEMM_PACKED_OPS, 0x3), KILN_OK);
    ck_assert_int_eq(vk_shader_check_launch(VK_SHADER_gemm_packed, GEMM_PACKED_OPS, 0x1), KILN_ERR_ARGUMENT);
    msg = kiln_error_message();
    ck_assert_msg(strstr(msg, "gemm_packed: operand 1 is passed as a storage buffer but the shader declares a texel"),
                  "%s", msg);
    ck_assert_int_eq(vk_shader_check_launch(VK_SHADER_COUNT, 1, 0), KILN_ERR_ARGUMENT);
    if (!vk_shader_built(VK_SHADER_gemm_coopmat)) {
        ck_assert_int_eq(vk_shader_check_launch(VK_SHADER_gemm_coopmat, GEMM_COOPMAT_OPS, 0), KILN_ERR_UNSUPPORTED);
        ck_assert_ptr_nonnull(strstr(kiln_error_message(), "shader 'gemm_coopmat' is not in this build"));
    }
}
END_TEST

static void add_tests(TCase *tc) {
    tcase_add_test(tc, every_module_binds_what_its_push_block_declares);
    tcase_add_test(tc, every_kernel_finds_its_builds);
    tcase_add_test(tc, a_module_that_disagrees_with_its_push_block_is_refused);
    tcase_add_test(tc, a_real_module_with_a_binding_moved_is_refused);
    tcase_add_test(tc, a_launch_that_disagrees_with_its_shader_is_refused);
}

/* no device needed: the modules and their tables are in the library */
int main(void) { return kt_run_tests("vulkan_abi", "vulkan", add_tests); }

#else
int main(void) { return 77; } /* built without Vulkan */
#endif
