/* Host side of the masked softmax (kiln_softmax_args): one workgroup per row; f32 or f16
 * data (the "_f16" variants). Scores larger than one binding (GPT-2's at context 1024 are
 * 50 MB per sequence) go in pieces of whole (batch, head) slabs of tq x tk: whole
 * sequences when one fits a binding, else heads of one sequence. */
#include "push.h"
#include "vk_internal.h"

typedef struct { SOFTMAX_FWD_PUSH } softmax_fwd_push;
typedef struct { SOFTMAX_BWD_PUSH } softmax_bwd_push;

typedef kiln_status (*slab_fn)(vk_dev *d, const kiln_softmax_args *a, vk_shader_id shader);

/* Runs one() over pieces of whole slabs that fit one binding. */
static kiln_status in_slabs(vk_dev *d, const kiln_softmax_args *a, vk_shader_id shader, slab_fn one) {
    int64_t slab = a->tq * a->tk, slab_bytes = slab * vk_elem(a->dtype), per_batch;
    kiln_status s = vk_rows_per_piece(d, a->heads, slab_bytes, &per_batch);
    if (s) return s;
    int64_t bstep = 1, hstep = per_batch;
    if (per_batch == a->heads) { /* whole sequences */
        hstep = a->heads;
        if ((s = vk_rows_per_piece(d, a->batch, a->heads * slab_bytes, &bstep))) return s;
    }
    for (int64_t b = 0; !s && b < a->batch; b += bstep) {
        for (int64_t h = 0; !s && h < a->heads; h += hstep) {
            kiln_softmax_args p = *a;
            int64_t at = (b * a->heads + h) * slab * vk_elem(a->dtype);
            p.batch = a->batch - b < bstep ? a->batch - b : bstep;
            p.heads = a->heads - h < hstep ? a->heads - h : hstep;
            p.x = vk_ref_at(a->x, at);
            p.add = vk_ref_at(a->add, at);
            p.y = vk_ref_at(a->y, at);
            p.dy = vk_ref_at(a->dy, at);
            p.dx = vk_ref_at(a->dx, at);
            p.dadd = vk_ref_at(a->dadd, at);
            p.lengths = vk_ref_at(a->lengths, b * 4);
            s = one(d, &p, shader);
        }
    }
    return s;
}

static kiln_status fwd_slabs(vk_dev *d, const kiln_softmax_args *a, vk_shader_id shader) {
    uint32_t es = vk_elem(a->dtype);
    int64_t rows = a->batch * a->heads * a->tq, n = rows * a->tk;
    softmax_fwd_push p = {.batch = vk_u32(a->batch),
                          .heads = vk_u32(a->heads),
                          .tq = vk_u32(a->tq),
                          .tk = vk_u32(a->tk),
                          .scale = a->scale,
                          .inv_temp = 1.0f / a->temperature,
                          .causal = a->causal != 0};
    vk_launch l = {.shader = shader, .n_ops = VK_OPS(p), .push = &p, .push_bytes = sizeof p, .n_spec = 1};
    l.spec[0] = vk_row_wg(d, a->tk);
    l.ops[VK_OP(softmax_fwd, x)] = vk_in(a->x, n, es);
    l.ops[VK_OP(softmax_fwd, add)] = vk_in(a->add, n, es);
    l.ops[VK_OP(softmax_fwd, lengths)] = vk_in(a->lengths, a->batch, 4);
    l.ops[VK_OP(softmax_fwd, y)] = vk_out(a->y, n, es);
    vk_grid_1d(d, (uint64_t)rows, l.groups);
    return vk_dispatch(d, &l);
}

kiln_status vk_softmax_fwd(void *dev, const kiln_softmax_args *a) {
    vk_dev *d = vk_of(dev);
    vk_shader_id shader;
    kiln_status s = vk_variant(d, VK_SHADER_softmax_fwd, a->dtype, &shader);
    return s ? s : in_slabs(d, a, shader, fwd_slabs);
}

static kiln_status bwd_slabs(vk_dev *d, const kiln_softmax_args *a, vk_shader_id shader) {
    uint32_t es = vk_elem(a->dtype);
    int64_t rows = a->batch * a->heads * a->tq, n = rows * a->tk;
    float inv_temp = 1.0f / a->temperature;
    softmax_bwd_push p = {
        .rows = vk_u32(rows), .tk = vk_u32(a->tk), .dx_scale = a->scale * inv_temp, .dadd_scale = inv_temp};
    vk_launch l = {.shader = shader, .n_ops = VK_OPS(p), .push = &p, .push_bytes = sizeof p, .n_spec = 1};
    l.spec[0] = vk_row_wg(d, a->tk);
    l.ops[VK_OP(softmax_bwd, y)] = vk_in(a->y, n, es);
    l.ops[VK_OP(softmax_bwd, dy)] = vk_in(a->dy, n, es);
    l.ops[VK_OP(softmax_bwd, dx)] = vk_out(a->dx, n, es);
    l.ops[VK_OP(softmax_bwd, dadd)] = vk_out(a->dadd, n, es);
    vk_grid_1d(d, (uint64_t)rows, l.groups);
    return vk_dispatch(d, &l);
}

kiln_status vk_softmax_bwd(void *dev, const kiln_softmax_args *a) {
    vk_dev *d = vk_of(dev);
    if (!vk_has(a->dx) && !vk_has(a->dadd)) return KILN_OK;
    vk_shader_id shader;
    kiln_status s = vk_variant(d, VK_SHADER_softmax_bwd, a->dtype, &shader);
    return s ? s : in_slabs(d, a, shader, bwd_slabs);
}
