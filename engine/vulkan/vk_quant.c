/* Host side of the product with a quantized matrix (kiln_qmatmul_args, shaders/qmatmul.comp)
 * in every block format, the K formats' super-blocks read 32 values at a time
 * (shaders/qblock.glsl): x, bias and y f32 or f16 (the "_f16" builds), the activations used
 * as given. It needs no optional feature, so it is the path of every device without integer
 * dot products and of KILN_VK_MIN_LIMITS mode; the others round the activations to int8
 * (vk_quant_dot.c). Both kernels map the work the same way (vk_qmatmul_map): a workgroup
 * computes R = WG / T weight rows, T invocations per row, against a tile of 8 rows of x (the
 * shaders' MT), on a grid of ceil(n / R) x ceil(m / 8) workgroups. */
#include "push.h"
#include "vk_internal.h"

typedef struct { QMATMUL_PUSH } qmatmul_push;

/* Invocations per weight row (T) and per workgroup (WG) for a row of `units` units of 32
 * values (blocks, or the K formats' sub-blocks: 8 per super-block).
 *
 * CPU-class devices (lavapipe) run a workgroup's invocations as SIMD lanes on one thread
 * and pay dearly for each workgroup and each barrier: T = 1, each invocation sums a whole
 * row by itself and writes it, with no reduction and no barrier; the lanes run WG rows side
 * by side. WG = 16, two passes of lavapipe's 8-wide (256-bit) SIMD, so that a decode
 * step's products of 128 to 512 rows still make 8 to 32 workgroups for its worker threads
 * (on 2 threads, 8, 16, 32 and 64 timed alike within the noise; one workgroup per row
 * was 1.5 to 50 times slower, the most on short rows).
 *
 * GPUs want the consecutive blocks of a row read by neighbouring invocations and few idle
 * lanes (hence units of 32 values in the K formats too: shaders/qblock.glsl): T = the
 * smallest power of two >= the units per row, at most the subgroup size (32 where the
 * device reports none, as in minimum-limits mode) and at most 64. So a short row (k = 128:
 * 4 blocks) gets 4 lanes and a workgroup of 128 covers 32 rows, where one workgroup per row
 * left 60 of 64 invocations idle and paid for 8 workgroup reductions; a long row gets a
 * subgroup's worth of lanes, each taking every T-th unit. The subgroup size is only a
 * width here: the T partials meet in shared memory, so a subgroup that runs narrower than
 * reported (Intel compiles compute shaders to SIMD8, 16 or 32) is still correct. WG = 128
 * (at least T), within the device's limits.
 *
 * KILN_VK_QMATMUL_LANES=T (a power of two up to 64; caps.qmatmul_lanes) forces T, with the
 * GPUs' WG, on any device, so that the tests run the GPUs' mapping, shared-memory sums
 * included, on lavapipe too (tests/vulkan.cmake). */
static void shape(const vk_dev *d, int64_t units, uint32_t *wg, uint32_t *lanes) {
    uint32_t t = 1, w;
    if (d->caps.qmatmul_lanes) { /* read once when the device's capabilities are (vk_instance.c) */
        t = d->caps.qmatmul_lanes;
        w = 128;
    } else if (d->dclass == VK_CLASS_CPU) {
        w = 16;
    } else {
        uint32_t width = d->caps.subgroup_size ? d->caps.subgroup_size : 32;
        if (width > 64) width = 64;
        while (t < width && t < units) t *= 2;
        w = 128;
    }
    uint32_t max_wg = d->caps.max_wg_invocations < d->caps.max_wg_size[0] ? d->caps.max_wg_invocations
                                                                          : d->caps.max_wg_size[0];
    if (w < t) w = t;
    while (w > max_wg) w /= 2;
    if (t > w) t = w;
    *wg = w;
    *lanes = t;
}

void vk_qmatmul_map(const vk_dev *d, const kiln_qmatmul_args *a, vk_launch *l) {
    l->n_spec = 3;
    shape(d, a->k / 32, &l->spec[0], &l->spec[1]);
    l->spec[2] = (uint32_t)a->format;
    /* R = WG / T weight rows per workgroup, by tiles of 8 rows of x (the shaders' MT) */
    uint32_t rows_per_group = l->spec[0] / l->spec[1];
    vk_grid_1d(d, (uint64_t)vk_div_up((uint64_t)a->n, rows_per_group) * (uint64_t)((a->m + 7) / 8), l->groups);
}

kiln_status vk_qmatmul(void *dev, const kiln_qmatmul_args *a) {
    vk_dev *d = vk_of(dev);
    if (vk_qgemv_applies(d, a)) return vk_qgemv(d, a);
    if (d->caps.int_dot) return vk_qmatmul_int8(d, a);
    vk_shader_id shader;
    kiln_status s = vk_variant(d, VK_SHADER_qmatmul, a->dtype, &shader);
    if (s) return s;
    uint32_t es = vk_elem(a->dtype);
    qmatmul_push p = {.m = vk_u32(a->m), .n = vk_u32(a->n), .k = vk_u32(a->k), .row_words = vk_u32(a->row_words)};
    vk_launch l = {.shader = shader, .n_ops = VK_OPS(p), .push = &p, .push_bytes = sizeof p};
    vk_qmatmul_map(d, a, &l);
    l.ops[VK_OP(qmatmul, x)] = vk_in(a->x, a->m * a->k, es);
    l.ops[VK_OP(qmatmul, w)] = vk_in(a->w, a->n * a->row_words, 4);
    l.ops[VK_OP(qmatmul, bias)] = vk_in(a->bias, a->n, es);
    l.ops[VK_OP(qmatmul, y)] = vk_out(a->y, a->m * a->n, es);
    return vk_dispatch(d, &l);
}

/* ---- the transposed product (shaders/qmatmul_t.comp) ----
 * A workgroup of QT_WG invocations owns QT_WG output columns (two units of 32 per row of W)
 * and KILN_ABI_QMATMUL_T_ROWS rows of dy: ceil(k / QT_WG) x ceil(m / ROWS) workgroups. 64 is
 * within every device's limits (Vulkan's minimum is 128 invocations) and keeps the shared
 * panel at 4.6 KiB. */
#define QT_WG 64u

typedef struct { QMATMUL_T_PUSH } qmatmul_t_push;

kiln_status vk_qmatmul_t(void *dev, const kiln_qmatmul_args *a) {
    vk_dev *d = vk_of(dev);
    vk_shader_id shader;
    kiln_status s = vk_variant(d, VK_SHADER_qmatmul_t, a->dtype, &shader);
    if (s) return s;
    if (a->m == 0) return KILN_OK;
    uint32_t es = vk_elem(a->dtype);
    qmatmul_t_push p = {.m = vk_u32(a->m), .n = vk_u32(a->n), .k = vk_u32(a->k), .row_words = vk_u32(a->row_words)};
    vk_launch l = {.shader = shader, .n_ops = VK_OPS(p), .push = &p, .push_bytes = sizeof p, .n_spec = 2};
    l.spec[0] = QT_WG;
    l.spec[1] = (uint32_t)a->format;
    vk_grid_1d(d, (uint64_t)vk_div_up((uint64_t)a->k, QT_WG) * vk_div_up((uint64_t)a->m, KILN_ABI_QMATMUL_T_ROWS),
               l.groups);
    l.ops[VK_OP(qmatmul_t, dy)] = vk_in(a->x, a->m * a->n, es);
    l.ops[VK_OP(qmatmul_t, w)] = vk_in(a->w, a->n * a->row_words, 4);
    l.ops[VK_OP(qmatmul_t, y)] = vk_out(a->y, a->m * a->k, es);
    return vk_dispatch(d, &l);
}
