/* Host side of shaders/qgemv.comp: the product with a Q8_0 or Q4_0 matrix for at most
 * KILN_ABI_GEMV_ROWS rows of x (a decoded token's), which vk_qmatmul takes wherever it applies:
 * rows of whole groups of 8 blocks (k a multiple of 256) starting on 16-byte texels, x on
 * texels of 4 values, both within the device's texel buffers. Devices with integer dot
 * products round x to int8 blocks (qmatmul_rounds_x promises it): there x is first rounded
 * by qmatmul_qx.comp, as vk_quant_dot.c does, and the qgemv_dot builds sum its integers
 * (exactly, in f32) to qmatmul_dot.comp's numbers.
 *
 * The mapping: CPU devices (lavapipe) run a workgroup's invocations as the lanes of one
 * thread's SIMD vectors and fetch texels lane by lane: T = 1, each invocation owns NR = 4
 * rows of w (each block of x fetched once for the four), 16 invocations per workgroup, so a
 * product of 768 rows makes 12 workgroups. GPUs: a subgroup (the _shared build: T lanes, a
 * power of two up to 32, no more than the row's groups) per row, 64 invocations per
 * workgroup. */
#include "push.h"
#include "vk_internal.h"

typedef struct { QGEMV_PUSH } qgemv_push;

int vk_qgemv_applies(const vk_dev *d, const kiln_qmatmul_args *a) {
    if ((a->format != KILN_ABI_Q8_0 && a->format != KILN_ABI_Q4_0) || a->m < 1 || a->m > KILN_ABI_GEMV_ROWS ||
        a->n < 1 || a->k % 256 != 0 || a->k == 0 || a->row_words % 4 != 0)
        return 0;
    uint32_t es = vk_elem(a->dtype);
    uint64_t at_x = a->x.buf->offset + a->x.off, at_w = a->w.buf->offset + a->w.off;
    int64_t texels_x = a->m * a->k / 4, texels_w = a->n * a->row_words / 4;
    if (d->caps.int_dot) { /* x is rounded into a scratch of whole texels first */
        at_x = 0;
        texels_x = a->m * (a->k / 32) * KILN_ABI_VK_QX_WORDS / 4;
    }
    return at_x % (4 * es) == 0 && at_w % 16 == 0 && (es == 4 || d->caps.texel_f16) &&
           texels_x <= (int64_t)d->caps.max_texel_elements && texels_w <= (int64_t)d->caps.max_texel_elements;
}

typedef struct { QMATMUL_QX_PUSH } qx_push;

/* x rounded to int8 blocks into the scratch qx (qmatmul_qx.comp), and the qgemv_dot build */
static kiln_status round_x(vk_dev *d, const kiln_qmatmul_args *a, kiln_ref *qx, vk_shader_id *shader) {
    vk_shader_id qx_shader;
    kiln_status s = vk_variant(d, VK_SHADER_qmatmul_qx, a->dtype, &qx_shader);
    if (s) return s;
    int f16 = a->dtype == KILN_F16, sub = d->caps.subgroup_arith;
    *shader = f16 ? (sub ? VK_SHADER_qgemv_dot_f16 : VK_SHADER_qgemv_dot_f16_shared)
                  : (sub ? VK_SHADER_qgemv_dot : VK_SHADER_qgemv_dot_shared);
    int64_t blocks = a->m * (a->k / 32), words = blocks * KILN_ABI_VK_QX_WORDS;
    if ((s = vk_scratch(d, (size_t)words * 4, qx))) return s;
    qx_push q = {.blocks = vk_u32(blocks)};
    vk_launch round = {.shader = qx_shader, .n_ops = VK_OPS(q), .push = &q, .push_bytes = sizeof q};
    round.ops[VK_OP(qmatmul_qx, x)] = vk_in(a->x, a->m * a->k, vk_elem(a->dtype));
    round.ops[VK_OP(qmatmul_qx, qx)] = vk_out(*qx, words, 4);
    s = vk_run_flat(d, &round, (uint64_t)blocks);
    if (s) vk_buf_release(d, qx->buf);
    return s;
}

kiln_status vk_qgemv(vk_dev *d, const kiln_qmatmul_args *a) {
    vk_shader_id shader;
    kiln_ref qx = {.buf = NULL};
    kiln_status s = d->caps.int_dot ? round_x(d, a, &qx, &shader) : vk_variant(d, VK_SHADER_qgemv, a->dtype, &shader);
    if (s) return s;
    /* KILN_VK_QMATMUL_LANES (caps.qmatmul_lanes) forces the GPUs' mapping, with T lanes per row
     * in the _shared build, so that the tests run it on lavapipe too */
    uint32_t es = vk_elem(a->dtype), cpu = d->dclass == VK_CLASS_CPU && !d->caps.qmatmul_lanes;
    uint32_t wg = cpu ? 16 : 64, t = 1, nr = cpu ? 4 : 1;
    if (!cpu) {
        uint32_t cap = d->caps.subgroup_arith && d->caps.subgroup_size ? d->caps.subgroup_size : 32;
        while (t < cap && t < (uint32_t)(a->k / 256)) t *= 2;
        if (d->caps.subgroup_arith) t = cap; /* a subgroup per row: T sizes the rows per workgroup */
        if (d->caps.qmatmul_lanes) t = d->caps.qmatmul_lanes;
    }
    uint32_t max_wg = d->caps.max_wg_invocations < d->caps.max_wg_size[0] ? d->caps.max_wg_invocations
                                                                          : d->caps.max_wg_size[0];
    while (wg > max_wg) wg /= 2;
    if (t > wg) t = wg;
    qgemv_push p = {.m = vk_u32(a->m), .n = vk_u32(a->n), .k = vk_u32(a->k), .row_words = vk_u32(a->row_words)};
    vk_launch l = {.shader = shader,
                   .n_ops = VK_OPS(p),
                   .push = &p,
                   .push_bytes = sizeof p,
                   .spec = {wg, t, (uint32_t)a->format, vk_u32(a->m), nr},
                   .n_spec = 5};
    int64_t texels_x = a->m * a->k / 4;
    if (qx.buf)
        l.ops[VK_OP(qgemv, x)] = vk_texels_u32(qx, a->m * (a->k / 32) * KILN_ABI_VK_QX_WORDS / 4);
    else
        l.ops[VK_OP(qgemv, x)] = es == 2 ? vk_texels_f16(a->x, texels_x) : vk_texels(a->x, texels_x);
    l.ops[VK_OP(qgemv, w)] = vk_texels_u32(a->w, a->n * a->row_words / 4);
    l.ops[VK_OP(qgemv, bias)] = vk_in(a->bias, a->n, es);
    l.ops[VK_OP(qgemv, y)] = vk_out(a->y, a->m * a->n, es);
    uint64_t rows_per_group = (uint64_t)wg / t * nr;
    vk_grid_1d(d, (a->n + rows_per_group - 1) / rows_per_group, l.groups);
    s = vk_dispatch(d, &l);
    if (qx.buf) vk_buf_release(d, qx.buf); /* freed once the recorded product has run */
    return s;
}
