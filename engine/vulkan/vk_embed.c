/* Host side of the embedding gather and its scatter-add backward (kiln_embed_args); the
 * table and the rows are f32 or f16 (the "_f16" variants), ids i32. */
#include "push.h"
#include "vk_internal.h"

typedef struct { EMBED_PUSH } embed_push;
typedef struct { EMBED_BWD_F16_PUSH } bwd_f16_push;
typedef struct { EMBED_OWNER_PUSH } owner_push;

kiln_status vk_embed_fwd(void *dev, const kiln_embed_args *a) {
    vk_dev *d = vk_of(dev);
    char name[VK_SHADER_NAME];
    kiln_status s = vk_variant(d, "embed_fwd", 0, a->dtype, name);
    if (s) return s;
    uint32_t es = vk_elem(a->dtype);
    embed_push p = {{0}, vk_u32(a->rows), vk_u32(a->vocab), vk_u32(a->dim)};
    vk_launch l = {.shader = name, .n_ops = 4, .push = &p, .push_bytes = sizeof p};
    l.ops[0] = vk_in(a->table, a->vocab * a->dim, es);
    l.ops[1] = vk_in(a->ids, a->rows, 4);
    l.ops[2] = vk_out(a->out, a->rows * a->dim, es);
    l.ops[3] = vk_out(a->err_flag, 1, 4);
    return vk_run_flat(d, &l, (uint64_t)(a->rows * a->dim));
}

/* f16: each touched row of dtable is summed in f32 and rounded once (embed_bwd.comp):
 * owner[id] = the id's first position, then per column chunk a walk over the positions
 * that accumulates into acc [rows][chunk] (f32) and stores every touched row once. */
static kiln_status embed_bwd_f16(vk_dev *d, const kiln_embed_args *a, const char *shader) {
    if (a->rows == 0 || a->dim == 0) return KILN_OK;
    uint64_t row_bytes = (uint64_t)a->rows * 4; /* one column of acc */
    if (row_bytes > d->caps.max_storage_range)
        return kiln_set_error(KILN_ERR_UNSUPPORTED, "vulkan embed_bwd: %lld positions exceed %s's largest binding in f16",
                              (long long)a->rows, d->name);
    int64_t chunk = (int64_t)(d->caps.max_storage_range / row_bytes);
    if (chunk > a->dim) chunk = a->dim;
    kiln_ref owner = {0, 0}, acc = {0, 0};
    kiln_status s = vk_scratch(d, (size_t)a->vocab * 4, &owner);
    if (!s) s = vk_scratch(d, (size_t)(a->rows * chunk) * 4, &acc);
    if (!s) { /* "no position yet": above any position, and exact as a float */
        kiln_fill_args f = {.dst = owner, .n = a->vocab, .dtype = KILN_I32, .value = 2147483520.0f};
        s = vk_fill(d, &f);
    }
    if (!s) {
        owner_push p = {{0}, vk_u32(a->rows), vk_u32(a->vocab)};
        vk_launch l = {.shader = "embed_owner", .n_ops = 2, .push = &p, .push_bytes = sizeof p};
        l.ops[0] = vk_in(a->ids, a->rows, 4);
        l.ops[1] = vk_out(owner, a->vocab, 4);
        s = vk_run_flat(d, &l, (uint64_t)a->rows);
    }
    for (int64_t c0 = 0; !s && c0 < a->dim; c0 += chunk) {
        int64_t cols = a->dim - c0 < chunk ? a->dim - c0 : chunk;
        bwd_f16_push p = {{0}, vk_u32(a->rows), vk_u32(a->vocab), vk_u32(a->dim), vk_u32(c0), vk_u32(cols)};
        vk_launch l = {.shader = shader, .n_ops = 5, .push = &p, .push_bytes = sizeof p};
        l.ops[0] = vk_in(a->ids, a->rows, 4);
        l.ops[1] = vk_in(a->dout, a->rows * a->dim, 2);
        l.ops[2] = vk_out(a->dtable, a->vocab * a->dim, 2);
        l.ops[3] = vk_in(owner, a->vocab, 4);
        l.ops[4] = vk_out(acc, a->rows * cols, 4);
        s = vk_run_flat(d, &l, (uint64_t)cols);
    }
    if (owner.buf) vk_buf_release(d, owner.buf);
    if (acc.buf) vk_buf_release(d, acc.buf);
    return s;
}

kiln_status vk_embed_bwd(void *dev, const kiln_embed_args *a) {
    vk_dev *d = vk_of(dev);
    char name[VK_SHADER_NAME];
    kiln_status s = vk_variant(d, "embed_bwd", 0, a->dtype, name);
    if (s) return s;
    if (a->dtype == KILN_F16) return embed_bwd_f16(d, a, name);
    embed_push p = {{0}, vk_u32(a->rows), vk_u32(a->vocab), vk_u32(a->dim)};
    vk_launch l = {.shader = name, .n_ops = 3, .push = &p, .push_bytes = sizeof p};
    l.ops[0] = vk_in(a->ids, a->rows, 4);
    l.ops[1] = vk_in(a->dout, a->rows * a->dim, 4);
    l.ops[2] = vk_out(a->dtable, a->vocab * a->dim, 4);
    return vk_run_flat(d, &l, (uint64_t)a->dim);
}
