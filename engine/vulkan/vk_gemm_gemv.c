/* Host side of shaders/gemv.comp: the GEMM for at most KILN_ABI_GEMV_ROWS rows of C, as when
 * decoding a token, where the packed and tiled kernels would copy or stage all of B for one
 * row's worth of use. vk_gemm.c picks it for every such product (the "gemv" variant).
 *
 * The mapping, by layout of B and device class:
 *  - B stored n x k (op(B) = B^T): T lanes per row of B, WG / T rows per workgroup. The
 *    subgroup build takes a subgroup per row whatever its width (T then sizes only the
 *    workgroup's rows: the reported subgroup size); the _shared build sums T = 32 lanes (8 on
 *    CPU devices) in shared memory.
 *  - B stored k x n: T chunks of 16 bytes of C's columns per workgroup, WG / T slices of K
 *    summed in shared memory. CPU devices (lavapipe) run a workgroup as SIMD lanes on one
 *    thread and pay for each barrier: one slice there (WG = T = 8, the 8 lanes of a 256-bit
 *    vector reading 128 contiguous bytes of a row of B per step); GPUs take 8 slices of 8
 *    chunks (WG = 64: the shared sums stay within 8 KiB).
 * How the operands are read: on CPU devices, both as texels of 4 values where they line up
 * with them (gemv_texel: lavapipe runs every storage-buffer load as a loop over the lanes,
 * bounds-checked, where a texel fetch brings 4 values per lane for about the price of one
 * such load: at 1 x 2304 x 768, 35 ms per product through 16-byte buffer loads); elsewhere
 * B in 16-byte words where its start, leading dimension, batch stride and contiguous extent
 * are whole chunks (4 f32 or 8 f16: gemv_vec), else word by word (gemv). */
#include "push.h"
#include "vk_internal.h"

typedef struct { GEMV_PUSH } gemv_push;

static int64_t extent(int64_t rows, int64_t cols, int64_t ld) { return (rows - 1) * ld + cols; }

int vk_gemv_applies(const vk_dev *d, const kiln_gemm_args *a) {
    return a->m >= 1 && a->m <= KILN_ABI_GEMV_ROWS && a->k > 0 && a->batch <= (int64_t)d->caps.max_wg_count[2] &&
           a->c_dtype == KILN_F32;
}

/* Whether B can be read in 16-byte chunks of vw elements of eb bytes. */
static int vec_b(const kiln_gemm_args *a, uint32_t vw, uint32_t eb) {
    uint64_t at = a->b.buf->offset + a->b.off;
    int64_t along = a->trans_b ? a->k : a->n; /* B's contiguous extent */
    return at % 16 == 0 && a->ldb % vw == 0 && (a->batch == 1 || a->stride_b % vw == 0) && along % vw == 0 &&
           (uint64_t)(eb * vw) == 16;
}

/* Whether A and B can be read as texels of 4 values: op(A) = A, and both operands' starts,
 * leading dimensions, batch strides and contiguous extents whole texels, within the device's
 * texel buffers. */
static int texel_ab(const vk_dev *d, const kiln_gemm_args *a, uint32_t ea, uint32_t eb) {
    uint64_t at_a = a->a.buf->offset + a->a.off, at_b = a->b.buf->offset + a->b.off;
    int64_t along = a->trans_b ? a->k : a->n;
    int64_t texels_a = ((a->batch - 1) * a->stride_a + extent(a->m, a->k, a->lda)) / 4;
    int64_t texels_b = ((a->batch - 1) * a->stride_b +
                        (a->trans_b ? extent(a->n, a->k, a->ldb) : extent(a->k, a->n, a->ldb))) / 4;
    return d->dclass == VK_CLASS_CPU && !a->trans_a && (d->caps.texel_f16 || (ea == 4 && eb == 4)) &&
           at_a % (4 * ea) == 0 && at_b % (4 * eb) == 0 && a->k % 4 == 0 && along % 4 == 0 && a->lda % 4 == 0 &&
           a->ldb % 4 == 0 && (a->batch == 1 || (a->stride_a % 4 == 0 && a->stride_b % 4 == 0)) &&
           texels_a <= (int64_t)d->caps.max_texel_elements && texels_b <= (int64_t)d->caps.max_texel_elements;
}

static vk_operand texels(kiln_ref r, int64_t elements, uint32_t elem) {
    return elem == 2 ? vk_texels_f16(r, elements / 4) : vk_texels(r, elements / 4);
}

kiln_status vk_gemm_gemv(vk_dev *d, const kiln_gemm_args *a, uint32_t ea, uint32_t eb) {
    uint32_t vw = 16 / eb, cpu = d->dclass == VK_CLASS_CPU;
    uint32_t max_wg = d->caps.max_wg_invocations < d->caps.max_wg_size[0] ? d->caps.max_wg_invocations
                                                                          : d->caps.max_wg_size[0];
    uint32_t wg, t;
    if (a->trans_b) {
        t = d->caps.subgroup_arith ? (d->caps.subgroup_size ? d->caps.subgroup_size : 32) : (cpu ? 8 : 32);
        wg = 64;
    } else {
        t = 8;
        wg = cpu ? 8 : 64;
    }
    while (wg > max_wg) wg /= 2;
    if (t > wg) t = wg;
    int texel = texel_ab(d, a, ea, eb), vec = !texel && vec_b(a, vw, eb);
    if (texel) vw = 4;
    vk_shader_id shader;
    if (texel)
        shader = d->caps.subgroup_arith ? VK_SHADER_gemv_texel : VK_SHADER_gemv_texel_shared;
    else if (vec)
        shader = d->caps.subgroup_arith ? VK_SHADER_gemv_vec : VK_SHADER_gemv_vec_shared;
    else if (vk_variant(d, VK_SHADER_gemv, KILN_F32, &shader))
        return kiln_error_status();
    gemv_push p = {.m = vk_u32(a->m),
                   .n = vk_u32(a->n),
                   .k = vk_u32(a->k),
                   .lda = vk_u32(a->lda),
                   .ldb = vk_u32(a->ldb),
                   .ldc = vk_u32(a->ldc),
                   .stride_a = vk_u32(a->stride_a),
                   .stride_b = vk_u32(a->stride_b),
                   .stride_c = vk_u32(a->stride_c),
                   .alpha = a->alpha,
                   .beta = a->beta};
    vk_launch l = {.shader = shader,
                   .n_ops = VK_OPS(p),
                   .push = &p,
                   .push_bytes = sizeof p,
                   .spec = {wg, t, a->trans_a != 0, a->trans_b != 0, ea == 2, eb == 2, a->beta != 0.0f, vk_u32(a->m)},
                   .n_spec = 8};
    int64_t a_one = a->trans_a ? extent(a->k, a->m, a->lda) : extent(a->m, a->k, a->lda);
    int64_t b_one = a->trans_b ? extent(a->n, a->k, a->ldb) : extent(a->k, a->n, a->ldb);
    int64_t b_all = (a->batch - 1) * a->stride_b + b_one;
    int64_t a_all = (a->batch - 1) * a->stride_a + a_one;
    l.ops[VK_OP(gemv, a)] = texel ? texels(a->a, a_all, ea) : vk_in(a->a, a_all, ea);
    l.ops[VK_OP(gemv, b)] = texel ? texels(a->b, b_all, eb) : vec ? vk_in(a->b, b_all / vw, 16) : vk_in(a->b, b_all, eb);
    l.ops[VK_OP(gemv, c)] = vk_out(a->c, (a->batch - 1) * a->stride_c + extent(a->m, a->n, a->ldc), 4);
    l.ops[VK_OP(gemv, bias)] = vk_in(a->bias, a->n, 4);
    uint64_t groups = a->trans_b ? vk_div_up((uint64_t)a->n, wg / t) : vk_div_up((uint64_t)a->n, (uint64_t)t * vw);
    vk_grid_1d(d, groups, l.groups);
    l.groups[2] = vk_u32(a->batch);
    return vk_dispatch(d, &l);
}
