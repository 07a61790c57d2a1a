/* Host side of the cross-entropy (kiln_xent_args). The forward is two dispatches: one
 * workgroup per row writes lse[r] and the row's loss and validity into a scratch buffer,
 * then one workgroup forms the mean over the valid rows. Out-of-range targets set the
 * err_flag instead of failing (the engine reports them on its next read). logits and
 * dlogits are f32 or f16 (the "_f16" variants); lse, loss, count and dloss are f32.
 * Logits larger than one binding (GPT-2's at context 1024: 206 MB) go in pieces of whole
 * rows, each row's loss landing in the scratch the mean is taken over. */
#include "push.h"
#include "vk_internal.h"

typedef struct { XENT_FWD_PUSH } xent_fwd_push;
typedef struct { XENT_SUM_PUSH } xent_sum_push;
typedef struct { XENT_BWD_PUSH } xent_bwd_push;

kiln_status vk_xent_fwd(void *dev, const kiln_xent_args *a) {
    vk_dev *d = vk_of(dev);
    vk_shader_id rows_shader, sum_shader;
    kiln_status s = vk_variant(d, VK_SHADER_xent_fwd, a->dtype, &rows_shader);
    if (!s) s = vk_variant(d, VK_SHADER_xent_sum, KILN_F32, &sum_shader); /* f32 row losses */
    if (s) return s;
    uint32_t es = vk_elem(a->dtype);
    int64_t piece;
    if ((s = vk_rows_per_piece(d, a->rows, a->vocab * es, &piece))) return s;
    kiln_ref rows_ref;
    if ((s = vk_scratch(d, (size_t)a->rows * 8, &rows_ref))) return s;
    for (int64_t r0 = 0; !s && r0 < a->rows; r0 += piece) {
        int64_t rn = a->rows - r0 < piece ? a->rows - r0 : piece;
        xent_fwd_push p = {
            .rows = vk_u32(rn), .vocab = vk_u32(a->vocab), .smoothing = a->smoothing, .ignore_index = a->ignore_index};
        vk_launch l = {.shader = rows_shader, .n_ops = VK_OPS(p), .push = &p, .push_bytes = sizeof p, .n_spec = 1};
        l.spec[0] = vk_row_wg(d, a->vocab);
        l.ops[VK_OP(xent_fwd, z)] = vk_in(vk_ref_at(a->logits, r0 * a->vocab * es), rn * a->vocab, es);
        l.ops[VK_OP(xent_fwd, targets)] = vk_in(vk_ref_at(a->targets, r0 * 4), rn, 4);
        l.ops[VK_OP(xent_fwd, lse)] = vk_out(vk_ref_at(a->lse, r0 * 4), rn, 4);
        l.ops[VK_OP(xent_fwd, err_flag)] = vk_out(a->err_flag, 1, 4);
        l.ops[VK_OP(xent_fwd, row_loss)] = vk_out(vk_ref_at(rows_ref, r0 * 8), 2 * rn, 4);
        vk_grid_1d(d, (uint64_t)rn, l.groups);
        s = vk_dispatch(d, &l);
    }
    if (!s) {
        xent_sum_push q = {.rows = vk_u32(a->rows)};
        vk_launch m = {.shader = sum_shader, .n_ops = VK_OPS(q), .push = &q, .push_bytes = sizeof q, .n_spec = 1};
        m.spec[0] = vk_row_wg(d, a->rows);
        m.ops[VK_OP(xent_sum, row_loss)] = vk_in(rows_ref, 2 * a->rows, 4);
        m.ops[VK_OP(xent_sum, loss)] = vk_out(a->loss, 1, 4);
        m.ops[VK_OP(xent_sum, count)] = vk_out(a->count, 1, 4);
        m.groups[0] = m.groups[1] = m.groups[2] = 1;
        s = vk_dispatch(d, &m);
    }
    vk_buf_release(d, rows_ref.buf);
    return s;
}

kiln_status vk_xent_bwd(void *dev, const kiln_xent_args *a) {
    vk_dev *d = vk_of(dev);
    vk_shader_id shader;
    kiln_status s = vk_variant(d, VK_SHADER_xent_bwd, a->dtype, &shader);
    if (s) return s;
    uint32_t es = vk_elem(a->dtype);
    int64_t piece;
    if ((s = vk_rows_per_piece(d, a->rows, a->vocab * es, &piece))) return s;
    for (int64_t r0 = 0; !s && r0 < a->rows; r0 += piece) {
        int64_t rn = a->rows - r0 < piece ? a->rows - r0 : piece, n = rn * a->vocab;
        xent_bwd_push p = {
            .rows = vk_u32(rn), .vocab = vk_u32(a->vocab), .smoothing = a->smoothing, .ignore_index = a->ignore_index};
        vk_launch l = {.shader = shader, .n_ops = VK_OPS(p), .push = &p, .push_bytes = sizeof p};
        l.ops[VK_OP(xent_bwd, z)] = vk_in(vk_ref_at(a->logits, r0 * a->vocab * es), n, es);
        l.ops[VK_OP(xent_bwd, targets)] = vk_in(vk_ref_at(a->targets, r0 * 4), rn, 4);
        l.ops[VK_OP(xent_bwd, lse)] = vk_in(vk_ref_at(a->lse, r0 * 4), rn, 4);
        l.ops[VK_OP(xent_bwd, count)] = vk_in(a->count, 1, 4);
        l.ops[VK_OP(xent_bwd, dloss)] = vk_in(a->dloss, 1, 4);
        l.ops[VK_OP(xent_bwd, dz)] = vk_out(vk_ref_at(a->dlogits, r0 * a->vocab * es), n, es);
        s = vk_run_flat(d, &l, (uint64_t)n);
    }
    return s;
}
