/* Host side of shaders/qgemv.comp: the product with a Q8_0 or Q4_0 matrix for at most
 * KILN_ABI_GEMV_ROWS rows of x (a decoded token's), which vk_qmatmul takes wherever it applies:
 * rows of whole groups of 8 blocks (k a multiple of 256) starting on 16-byte texels, x on
 * texels of 4 values, both within the device's texel buffers, and a device that computes in
 * f32 (devices with integer dot products round x to int8 blocks: vk_quant_dot.c, whose
 * numbers qmatmul_rounds_x promises).
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
        a->n < 1 || a->k % 256 != 0 || a->k == 0 || a->row_words % 4 != 0 || d->caps.int_dot)
        return 0;
    uint32_t es = vk_elem(a->dtype);
    uint64_t at_x = a->x.buf->offset + a->x.off, at_w = a->w.buf->offset + a->w.off;
    int64_t texels_x = a->m * a->k / 4, texels_w = a->n * a->row_words / 4;
    return at_x % (4 * es) == 0 && at_w % 16 == 0 && (es == 4 || d->caps.texel_f16) &&
           texels_x <= (int64_t)d->caps.max_texel_elements && texels_w <= (int64_t)d->caps.max_texel_elements;
}

kiln_status vk_qgemv(vk_dev *d, const kiln_qmatmul_args *a) {
    vk_shader_id shader;
    kiln_status s = vk_variant(d, VK_SHADER_qgemv, a->dtype, &shader);
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
    l.ops[VK_OP(qgemv, x)] = es == 2 ? vk_texels_f16(a->x, texels_x) : vk_texels(a->x, texels_x);
    l.ops[VK_OP(qgemv, w)] = vk_texels_u32(a->w, a->n * a->row_words / 4);
    l.ops[VK_OP(qgemv, bias)] = vk_in(a->bias, a->n, es);
    l.ops[VK_OP(qgemv, y)] = vk_out(a->y, a->m * a->n, es);
    uint64_t rows_per_group = (uint64_t)wg / t * nr;
    vk_grid_1d(d, (a->n + rows_per_group - 1) / rows_per_group, l.groups);
    return vk_dispatch(d, &l);
}
