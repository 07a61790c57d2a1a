/* Host side of qmatmul's int8 path (shaders/qmatmul_qx.comp, shaders/qmatmul_dot.comp), for
 * devices with integer dot products (vk_caps.int_dot). For the 32-value formats it is the
 * CPU's product (cpu/cpu_quant_dot.h) on the GPU, so a model's quantized layers give the same
 * numbers on both (up to the f32 order of the sums and, rarely, one activation rounded the
 * other way: qmatmul_qx.comp). The K formats take the same blocks of 32 activations, one per
 * sub-block of 32 weights (their scales are per 32 or per 16 values), where the CPU rounds
 * per 256 as ggml does (Q8_K): a finer rounding, so within the CPU's bound.
 *
 * Why round activations at all: a block then costs 8 packed 4x8-bit dot products against
 * 32 f32 multiply-adds, and the activations are read from a quarter of their f32 size,
 * for a rounding error of at most half a step per activation, as on the CPU.
 *
 * Two dispatches: x's blocks rounded into a scratch buffer (KILN_ABI_VK_QX_WORDS words per
 * block), then the product, mapped as vk_quant.c's (vk_qmatmul_shape): R = WG / T weight
 * rows per workgroup, T invocations per row (1 on CPU devices, up to a subgroup's width on
 * GPUs), by tiles of 8 rows of x. */
#include "push.h"
#include "vk_internal.h"

typedef struct { QMATMUL_QX_PUSH } qx_push;
typedef struct { QMATMUL_DOT_PUSH } dot_push;

int vk_qmatmul_rounds_x(void *dev) { return vk_of(dev)->caps.int_dot != 0; }

kiln_status vk_qmatmul_int8(vk_dev *d, const kiln_qmatmul_args *a) {
    vk_shader_id qx_shader, dot_shader;
    kiln_status s = vk_variant(d, VK_SHADER_qmatmul_qx, a->dtype, &qx_shader);
    if (!s) s = vk_variant(d, VK_SHADER_qmatmul_dot, a->dtype, &dot_shader);
    if (s) return s;
    uint32_t es = vk_elem(a->dtype);
    int64_t blocks = a->m * (a->k / 32), qx_words = blocks * KILN_ABI_VK_QX_WORDS;
    if (blocks == 0 || a->n == 0) return KILN_OK; /* y is empty */
    kiln_ref qx;
    if ((s = vk_scratch(d, (size_t)qx_words * 4, &qx))) return s;

    qx_push q = {.blocks = vk_u32(blocks)};
    vk_launch round = {.shader = qx_shader, .n_ops = VK_OPS(q), .push = &q, .push_bytes = sizeof q};
    round.ops[VK_OP(qmatmul_qx, x)] = vk_in(a->x, a->m * a->k, es);
    round.ops[VK_OP(qmatmul_qx, qx)] = vk_out(qx, qx_words, 4);
    s = vk_run_flat(d, &round, (uint64_t)blocks);

    dot_push p = {.m = vk_u32(a->m), .n = vk_u32(a->n), .k = vk_u32(a->k), .row_words = vk_u32(a->row_words),
                  .format = (u32)a->format};
    vk_launch l = {.shader = dot_shader, .n_ops = VK_OPS(p), .push = &p, .push_bytes = sizeof p, .n_spec = 2};
    vk_qmatmul_shape(d, a->k / 32, &l.spec[0], &l.spec[1]);
    l.ops[VK_OP(qmatmul_dot, qx)] = vk_in(qx, qx_words, 4);
    l.ops[VK_OP(qmatmul_dot, w)] = vk_in(a->w, a->n * a->row_words, 4);
    l.ops[VK_OP(qmatmul_dot, bias)] = vk_in(a->bias, a->n, es);
    l.ops[VK_OP(qmatmul_dot, y)] = vk_out(a->y, a->m * a->n, es);
    /* R = WG / T weight rows per workgroup, by tiles of 8 rows of x (the shader's MT) */
    uint32_t rows_per_group = l.spec[0] / l.spec[1];
    vk_grid_1d(d, (uint64_t)vk_div_up((uint64_t)a->n, rows_per_group) * (uint64_t)((a->m + 7) / 8), l.groups);
    if (!s) s = vk_dispatch(d, &l);
    vk_buf_release(d, qx.buf); /* freed once the recorded product has run */
    return s;
}
