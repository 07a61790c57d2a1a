/* Host side of the GEMM (kiln_gemm_args): picks the kernel variant and its tile sizes by
 * device class, and splits batches beyond the device's workgroup-count limit. */
#include "push.h"
#include "vk_internal.h"

typedef struct { GEMM_PUSH } gemm_push;

/* Elements of one stored operand: rows x cols with leading dimension ld. */
static int64_t extent(int64_t rows, int64_t cols, int64_t ld) { return (rows - 1) * ld + cols; }

typedef struct gemm_config {
    const char *shader;
    uint32_t wx, wy, tm, tn, bk;
} gemm_config;

/* The shared-memory tiled kernel: 16 x 16 invocations of 4 x 4 blocks (64 x 64 tiles),
 * fewer invocations and taller blocks where the device allows only 128. */
static gemm_config pick(const vk_dev *d) {
    gemm_config c = {"gemm", 16, 16, 4, 4, 16};
    if (d->caps.max_wg_invocations < 256) c.wy = 8, c.tm = 8;
    return c;
}

kiln_status vk_gemm(void *dev, const kiln_gemm_args *a) {
    vk_dev *d = vk_of(dev);
    if (a->c_dtype != KILN_F32) return kiln_set_error(KILN_ERR_DTYPE, "vulkan gemm: output must be f32");
    if ((a->a_dtype != KILN_F32 && a->a_dtype != KILN_F16) || (a->b_dtype != KILN_F32 && a->b_dtype != KILN_F16))
        return kiln_set_error(KILN_ERR_DTYPE, "vulkan gemm: inputs must be f32 or f16, got %s and %s",
                              kiln_dtype_name(a->a_dtype), kiln_dtype_name(a->b_dtype));
    if (a->m <= 0 || a->n <= 0 || a->batch <= 0) return KILN_OK;
    uint32_t ea = a->a_dtype == KILN_F16 ? 2 : 4, eb = a->b_dtype == KILN_F16 ? 2 : 4;
    gemm_config cfg = pick(d);
    gemm_push p = {{0},
                   vk_u32(a->m),
                   vk_u32(a->n),
                   vk_u32(a->k),
                   vk_u32(a->lda),
                   vk_u32(a->ldb),
                   vk_u32(a->ldc),
                   vk_u32(a->stride_a),
                   vk_u32(a->stride_b),
                   vk_u32(a->stride_c),
                   a->alpha,
                   a->beta,
                   0};
    vk_launch l = {.shader = cfg.shader, .n_ops = 4, .push = &p, .push_bytes = sizeof p, .n_spec = 9};
    uint32_t spec[9] = {cfg.wx, cfg.wy, cfg.tm, cfg.tn, cfg.bk, (uint32_t)(a->trans_a != 0), (uint32_t)(a->trans_b != 0),
                        (uint32_t)(ea == 2), (uint32_t)(eb == 2)};
    for (int i = 0; i < 9; i++) l.spec[i] = spec[i];
    int64_t a_one = a->k > 0 ? (a->trans_a ? extent(a->k, a->m, a->lda) : extent(a->m, a->k, a->lda)) : 0;
    int64_t b_one = a->k > 0 ? (a->trans_b ? extent(a->n, a->k, a->ldb) : extent(a->k, a->n, a->ldb)) : 0;
    int64_t c_one = extent(a->m, a->n, a->ldc);
    uint32_t bm = cfg.wy * cfg.tm, bn = cfg.wx * cfg.tn;
    l.groups[0] = vk_div_up((uint64_t)a->n, bn);
    l.groups[1] = vk_div_up((uint64_t)a->m, bm);
    int64_t max_z = d->caps.max_wg_count[2];
    for (int64_t b0 = 0; b0 < a->batch; b0 += max_z) {
        int64_t nb = a->batch - b0 < max_z ? a->batch - b0 : max_z;
        kiln_ref ra = a->a, rb = a->b, rc = a->c;
        ra.off += (size_t)(b0 * a->stride_a) * ea;
        rb.off += (size_t)(b0 * a->stride_b) * eb;
        rc.off += (size_t)(b0 * a->stride_c) * 4;
        l.ops[0] = vk_in(ra, (nb - 1) * a->stride_a + a_one, ea);
        l.ops[1] = vk_in(rb, (nb - 1) * a->stride_b + b_one, eb);
        l.ops[2] = vk_out(rc, (nb - 1) * a->stride_c + c_one, 4);
        l.ops[3] = vk_in(a->bias, a->n, 4);
        if (a->k == 0) { /* nothing to read: any valid element extent keeps the tracker exact */
            l.ops[0].bytes = l.ops[1].bytes = 0;
        }
        l.groups[2] = (uint32_t)nb;
        p.batch = (u32)nb;
        kiln_status s = vk_dispatch(d, &l);
        if (s) return s;
    }
    return KILN_OK;
}
