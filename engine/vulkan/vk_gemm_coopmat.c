/* The cooperative-matrix GEMM (VK_KHR_cooperative_matrix): f16 x f16 -> f32 on the tensor
 * units of GPUs that have them.
 *
 * Kept apart from the other GEMM variants because it cannot be tested here: the CI
 * machines run lavapipe, which has no cooperative matrices, and Debian 12's glslc cannot
 * even compile the shader (cmake then leaves it out of the build, and
 * vk_gemm_coopmat_applies() is always 0). It is therefore guarded three ways: the shader
 * must be in this build, the device must report the tile's f16 -> f32 subgroup shape
 * (KILN_ABI_VK_COOPMAT_TILE, 16 x 16 x 16; vk_instance.c), and KILN_VK_MIN_LIMITS turns it
 * off. It takes only f16 inputs: f32
 * operands are never rounded to f16 behind the user's back.
 *
 * Three dispatches: gemm_coopmat_pack.comp copies op(A) and op(B) into zero-padded
 * row-major f16 (multiples of the tile: every tile load is whole and aligned), gemm_coopmat.comp
 * computes the padded f32 product one 16 x 16 tile per subgroup, and
 * gemm_coopmat_epilogue.comp applies alpha, beta, bias and the edges into C. */
#include "push.h"
#include "vk_internal.h"

typedef struct { GEMM_COOPMAT_PUSH } gemm_coopmat_push;
typedef struct { GEMM_COOPMAT_PACK_PUSH } gemm_coopmat_pack_push;
typedef struct { GEMM_COOPMAT_EPILOGUE_PUSH } gemm_coopmat_epilogue_push;

#define TILE KILN_ABI_VK_COOPMAT_TILE

/* v padded to whole tiles */
static int64_t tiles(int64_t v) { return kiln_round_up(v, TILE); }

int vk_gemm_coopmat_applies(const vk_dev *d, const kiln_gemm_args *a) {
    if (!d->caps.coopmat || a->a_dtype != KILN_F16 || a->b_dtype != KILN_F16 || a->k <= 0) return 0;
    if (!vk_shader_built(VK_SHADER_gemm_coopmat) || d->caps.subgroup_size == 0) return 0;
    const uint32_t *g = d->caps.max_wg_count;
    int64_t mp = tiles(a->m), np = tiles(a->n), kp = tiles(a->k);
    int64_t per_batch = mp * kp + kp * np + mp * np;
    return mp / TILE <= g[1] && np / TILE <= g[0] && a->batch <= g[2] && mp <= g[1] && kp <= g[1] &&
           per_batch * a->batch * 4 <= (int64_t)d->max_operand_bytes;
}

/* op(X) (rows x cols, f16) of every batch, or once when shared, into padded row-major f16. */
static kiln_status vk_gemm_coopmat_pack(vk_dev *d, kiln_ref src, int trans, int64_t rows, int64_t cols, int64_t ld,
                                        int64_t stride, int64_t batch, int64_t rows_p, int64_t cols_p, kiln_ref dst) {
    int64_t nb = stride ? batch : 1;
    int64_t one = trans ? (cols - 1) * ld + rows : (rows - 1) * ld + cols;
    gemm_coopmat_pack_push p = {.rows = vk_u32(rows),
                                .cols = vk_u32(cols),
                                .ld = vk_u32(ld),
                                .stride = vk_u32(stride),
                                .rows_p = vk_u32(rows_p),
                                .cols_p = vk_u32(cols_p),
                                .trans = trans != 0};
    vk_launch l = {
        .shader = VK_SHADER_gemm_coopmat_pack, .n_ops = VK_OPS(p), .push = &p, .push_bytes = sizeof p, .n_spec = 1};
    l.spec[0] = vk_flat_wg(d);
    l.ops[VK_OP(gemm_coopmat_pack, src)] = vk_in(src, (nb - 1) * stride + one, 2);
    l.ops[VK_OP(gemm_coopmat_pack, dst)] = vk_out(dst, nb * rows_p * cols_p, 2);
    l.groups[0] = vk_div_up((uint64_t)(cols_p / 2), l.spec[0]);
    l.groups[1] = vk_u32(rows_p);
    l.groups[2] = vk_u32(nb);
    return vk_dispatch(d, &l);
}

kiln_status vk_gemm_coopmat(vk_dev *d, const kiln_gemm_args *a) {
    int64_t mp = tiles(a->m), np = tiles(a->n), kp = tiles(a->k);
    int64_t ba = a->stride_a ? a->batch : 1, bb = a->stride_b ? a->batch : 1;
    kiln_ref pa = {.buf = NULL}, pb = {.buf = NULL}, prod = {.buf = NULL};
    kiln_status s = vk_scratch(d, (size_t)(ba * mp * kp) * 2, &pa);
    if (!s) s = vk_scratch(d, (size_t)(bb * kp * np) * 2, &pb);
    if (!s) s = vk_scratch(d, (size_t)(a->batch * mp * np) * 4, &prod);
    /* op(A) is M x K; op(B) is K x N: B[k][n] = trans_b ? B[n * ldb + k] : B[k * ldb + n] */
    if (!s) s = vk_gemm_coopmat_pack(d, a->a, a->trans_a, a->m, a->k, a->lda, a->stride_a, a->batch, mp, kp, pa);
    if (!s) s = vk_gemm_coopmat_pack(d, a->b, a->trans_b, a->k, a->n, a->ldb, a->stride_b, a->batch, kp, np, pb);
    if (!s) {
        gemm_coopmat_push p = {.mp = vk_u32(mp),
                               .np = vk_u32(np),
                               .kp = vk_u32(kp),
                               .stride_a = vk_u32(a->stride_a ? mp * kp : 0),
                               .stride_b = vk_u32(a->stride_b ? kp * np : 0),
                               .stride_c = vk_u32(mp * np)};
        vk_launch l = {
            .shader = VK_SHADER_gemm_coopmat, .n_ops = VK_OPS(p), .push = &p, .push_bytes = sizeof p, .n_spec = 1};
        l.spec[0] = d->caps.subgroup_size;
        l.ops[VK_OP(gemm_coopmat, a)] = vk_in(pa, ba * mp * kp, 2);
        l.ops[VK_OP(gemm_coopmat, b)] = vk_in(pb, bb * kp * np, 2);
        l.ops[VK_OP(gemm_coopmat, c)] = vk_out(prod, a->batch * mp * np, 4);
        l.groups[0] = vk_u32(np / TILE);
        l.groups[1] = vk_u32(mp / TILE);
        l.groups[2] = vk_u32(a->batch);
        s = vk_dispatch(d, &l);
    }
    if (!s) {
        gemm_coopmat_epilogue_push p = {.m = vk_u32(a->m),
                                        .n = vk_u32(a->n),
                                        .np = vk_u32(np),
                                        .ldc = vk_u32(a->ldc),
                                        .stride_p = vk_u32(mp * np),
                                        .stride_c = vk_u32(a->stride_c),
                                        .alpha = a->alpha,
                                        .beta = a->beta};
        vk_launch l = {.shader = VK_SHADER_gemm_coopmat_epilogue,
                       .n_ops = VK_OPS(p),
                       .push = &p,
                       .push_bytes = sizeof p,
                       .n_spec = 1};
        l.spec[0] = vk_flat_wg(d);
        l.ops[VK_OP(gemm_coopmat_epilogue, p)] = vk_in(prod, a->batch * mp * np, 4);
        l.ops[VK_OP(gemm_coopmat_epilogue, c)] = vk_out(a->c, (a->batch - 1) * a->stride_c + (a->m - 1) * a->ldc + a->n, 4);
        l.ops[VK_OP(gemm_coopmat_epilogue, bias)] = vk_in(a->bias, a->n, 4);
        l.groups[0] = vk_div_up((uint64_t)a->n, l.spec[0]);
        l.groups[1] = vk_u32(a->m);
        l.groups[2] = vk_u32(a->batch);
        s = vk_dispatch(d, &l);
    }
    if (pa.buf) vk_buf_release(d, pa.buf);
    if (pb.buf) vk_buf_release(d, pb.buf);
    if (prod.buf) vk_buf_release(d, prod.buf);
    return s;
}
