/* Host side of the embedding gather and its scatter-add backward (kiln_embed_args); the
 * table and the rows are f32 or f16 (the "_f16" variants), ids i32.
 *
 * A table larger than one binding (GPT-2's f32 token table is 154 MB, lavapipe binds 128
 * MiB) is processed in windows of whole rows: each dispatch binds rows v0 .. v0 + vn - 1
 * and handles the positions whose id falls there. Positions too many for one binding go in
 * pieces too, except in the f16 backward, whose rows are summed over all positions at once
 * to be rounded once. */
#include "push.h"
#include "vk_internal.h"

typedef struct { EMBED_FWD_PUSH } embed_fwd_push;
typedef struct { EMBED_BWD_PUSH } embed_bwd_push;
typedef struct { EMBED_BWD_F16_PUSH } embed_bwd_f16_push;
typedef struct { EMBED_OWNER_PUSH } embed_owner_push;

static int64_t least(int64_t a, int64_t b) { return a < b ? a : b; }

/* One dispatch over positions r0 .. r0 + rn - 1 and table rows v0 .. v0 + vn - 1. */
typedef kiln_status (*embed_part_fn)(vk_dev *d, const kiln_embed_args *a, vk_shader_id shader, int64_t r0, int64_t rn,
                                     int64_t v0, int64_t vn);

static kiln_status fwd_part(vk_dev *d, const kiln_embed_args *a, vk_shader_id shader, int64_t r0, int64_t rn,
                            int64_t v0, int64_t vn) {
    uint32_t es = vk_elem(a->dtype);
    embed_fwd_push p = {
        .rows = vk_u32(rn), .vocab = vk_u32(a->vocab), .dim = vk_u32(a->dim), .v0 = vk_u32(v0), .vn = vk_u32(vn)};
    vk_launch l = {.shader = shader, .n_ops = VK_OPS(p), .push = &p, .push_bytes = sizeof p};
    l.ops[VK_OP(embed_fwd, table)] = vk_in(vk_ref_at(a->table, v0 * a->dim * es), vn * a->dim, es);
    l.ops[VK_OP(embed_fwd, ids)] = vk_in(vk_ref_at(a->ids, r0 * 4), rn, 4);
    l.ops[VK_OP(embed_fwd, out)] = vk_out(vk_ref_at(a->out, r0 * a->dim * es), rn * a->dim, es);
    l.ops[VK_OP(embed_fwd, err_flag)] = vk_out(a->err_flag, 1, 4);
    return vk_run_flat(d, &l, (uint64_t)(rn * a->dim));
}

/* the f32 backward: one invocation per column walks the positions */
static kiln_status bwd_part(vk_dev *d, const kiln_embed_args *a, vk_shader_id shader, int64_t r0, int64_t rn,
                            int64_t v0, int64_t vn) {
    uint32_t es = vk_elem(a->dtype);
    embed_bwd_push p = {
        .rows = vk_u32(rn), .vocab = vk_u32(a->vocab), .dim = vk_u32(a->dim), .v0 = vk_u32(v0), .vn = vk_u32(vn)};
    vk_launch l = {.shader = shader, .n_ops = VK_OPS(p), .push = &p, .push_bytes = sizeof p};
    l.ops[VK_OP(embed_bwd, ids)] = vk_in(vk_ref_at(a->ids, r0 * 4), rn, 4);
    l.ops[VK_OP(embed_bwd, dout)] = vk_in(vk_ref_at(a->dout, r0 * a->dim * es), rn * a->dim, es);
    l.ops[VK_OP(embed_bwd, dtable)] = vk_out(vk_ref_at(a->dtable, v0 * a->dim * es), vn * a->dim, es);
    return vk_run_flat(d, &l, (uint64_t)a->dim);
}

/* The forward, or the f32 backward, over pieces of positions (out or dout rows) and windows
 * of table rows. Pieces run in position order, so in the backward each element of dtable
 * adds its positions in the CPU's order. */
static kiln_status embed_pieces(vk_dev *d, const kiln_embed_args *a, vk_shader_id shader, embed_part_fn part) {
    int64_t row_bytes = a->dim * vk_elem(a->dtype), window, piece;
    kiln_status s = vk_rows_per_piece(d, a->vocab, row_bytes, &window);
    if (!s) s = vk_rows_per_piece(d, a->rows, row_bytes, &piece);
    for (int64_t r0 = 0; !s && r0 < a->rows; r0 += piece)
        for (int64_t v0 = 0; !s && v0 < a->vocab; v0 += window)
            s = part(d, a, shader, r0, least(a->rows - r0, piece), v0, least(a->vocab - v0, window));
    return s;
}

kiln_status vk_embed_fwd(void *dev, const kiln_embed_args *a) {
    vk_dev *d = vk_of(dev);
    vk_shader_id shader;
    kiln_status s = vk_variant(d, VK_SHADER_embed_fwd, a->dtype, &shader);
    return s ? s : embed_pieces(d, a, shader, fwd_part);
}

/* f16: each touched row of dtable is summed in f32 and rounded once (embed_bwd.comp):
 * owner[id] = the id's first position, then per column chunk a walk over the positions
 * that accumulates into acc [rows][chunk] (f32) and stores every touched row once. */
static kiln_status vk_embed_bwd_f16(vk_dev *d, const kiln_embed_args *a, vk_shader_id shader) {
    if (a->rows == 0 || a->dim == 0) return KILN_OK;
    uint64_t row_bytes = (uint64_t)a->rows * 4; /* one column of acc */
    if (row_bytes > d->max_operand_bytes)
        return kiln_set_error(KILN_ERR_UNSUPPORTED, "vulkan embed_bwd: %lld positions exceed %s's largest binding in f16",
                              (long long)a->rows, d->name);
    int64_t chunk = (int64_t)(d->max_operand_bytes / row_bytes);
    if (chunk > a->dim) chunk = a->dim;
    kiln_ref owner = {.buf = NULL}, acc = {.buf = NULL};
    kiln_status s = vk_scratch(d, (size_t)a->vocab * 4, &owner);
    if (!s) s = vk_scratch(d, (size_t)(a->rows * chunk) * 4, &acc);
    if (!s) { /* "no position yet": above any position, and exact as a float */
        kiln_fill_args f = {.dst = owner, .n = a->vocab, .dtype = KILN_I32, .value = 2147483520.0f};
        s = vk_fill_piece(d, &f);
    }
    if (!s) {
        embed_owner_push p = {.rows = vk_u32(a->rows), .vocab = vk_u32(a->vocab)};
        vk_launch l = {.shader = VK_SHADER_embed_owner, .n_ops = VK_OPS(p), .push = &p, .push_bytes = sizeof p};
        l.ops[VK_OP(embed_owner, ids)] = vk_in(a->ids, a->rows, 4);
        l.ops[VK_OP(embed_owner, owner)] = vk_out(owner, a->vocab, 4);
        s = vk_run_flat(d, &l, (uint64_t)a->rows);
    }
    int64_t window, piece;
    if (!s) s = vk_rows_per_piece(d, a->vocab, a->dim * 2, &window);
    if (!s) s = vk_rows_per_piece(d, a->rows, a->dim * 2, &piece);
    for (int64_t v0 = 0; !s && v0 < a->vocab; v0 += window) {
        int64_t vn = least(a->vocab - v0, window);
        for (int64_t c0 = 0; !s && c0 < a->dim; c0 += chunk) {
            int64_t cols = least(a->dim - c0, chunk);
            /* the additions, piece by piece in position order; then the one rounding */
            for (int64_t r0 = 0; !s;) {
                int store = r0 >= a->rows;
                int64_t rn = store ? 0 : least(a->rows - r0, piece);
                embed_bwd_f16_push p = {.rows = vk_u32(a->rows),
                                        .vocab = vk_u32(a->vocab),
                                        .dim = vk_u32(a->dim),
                                        .c0 = vk_u32(c0),
                                        .cols = vk_u32(cols),
                                        .v0 = vk_u32(v0),
                                        .vn = vk_u32(vn),
                                        .r0 = vk_u32(r0),
                                        .rn = vk_u32(rn),
                                        .phase = store ? KILN_ABI_VK_EMBED_BWD_STORE : KILN_ABI_VK_EMBED_BWD_ADD};
                vk_launch l = {.shader = shader, .n_ops = VK_OPS(p), .push = &p, .push_bytes = sizeof p};
                l.ops[VK_OP(embed_bwd, ids)] = vk_in(a->ids, a->rows, 4);
                /* the store pass reads no dout: any valid binding */
                l.ops[VK_OP(embed_bwd, dout)] = vk_in(vk_ref_at(a->dout, (store ? 0 : r0) * a->dim * 2), (store ? 1 : rn) * a->dim, 2);
                l.ops[VK_OP(embed_bwd, dtable)] = vk_out(vk_ref_at(a->dtable, v0 * a->dim * 2), vn * a->dim, 2);
                l.ops[VK_OP(embed_bwd, owner)] = vk_in(owner, a->vocab, 4);
                l.ops[VK_OP(embed_bwd, acc)] = vk_out(acc, a->rows * cols, 4);
                s = vk_run_flat(d, &l, (uint64_t)cols);
                if (store) break;
                r0 += rn;
            }
        }
    }
    if (owner.buf) vk_buf_release(d, owner.buf);
    if (acc.buf) vk_buf_release(d, acc.buf);
    return s;
}

kiln_status vk_embed_bwd(void *dev, const kiln_embed_args *a) {
    vk_dev *d = vk_of(dev);
    vk_shader_id shader;
    kiln_status s = vk_variant(d, VK_SHADER_embed_bwd, a->dtype, &shader);
    if (s) return s;
    if (a->dtype == KILN_F16) return vk_embed_bwd_f16(d, a, shader);
    return embed_pieces(d, a, shader, bwd_part);
}
