/* Host side of the embedding gather and its scatter-add backward (kiln_embed_args). */
#include "push.h"
#include "vk_internal.h"

typedef struct { EMBED_PUSH } embed_push;

kiln_status vk_embed_fwd(void *dev, const kiln_embed_args *a) {
    vk_dev *d = vk_of(dev);
    embed_push p = {{0}, vk_u32(a->rows), vk_u32(a->vocab), vk_u32(a->dim)};
    vk_launch l = {.shader = "embed_fwd", .n_ops = 4, .push = &p, .push_bytes = sizeof p};
    l.ops[0] = vk_in(a->table, a->vocab * a->dim, 4);
    l.ops[1] = vk_in(a->ids, a->rows, 4);
    l.ops[2] = vk_out(a->out, a->rows * a->dim, 4);
    l.ops[3] = vk_out(a->err_flag, 1, 4);
    return vk_run_flat(d, &l, (uint64_t)(a->rows * a->dim));
}

kiln_status vk_embed_bwd(void *dev, const kiln_embed_args *a) {
    vk_dev *d = vk_of(dev);
    embed_push p = {{0}, vk_u32(a->rows), vk_u32(a->vocab), vk_u32(a->dim)};
    vk_launch l = {.shader = "embed_bwd", .n_ops = 3, .push = &p, .push_bytes = sizeof p};
    l.ops[0] = vk_in(a->ids, a->rows, 4);
    l.ops[1] = vk_in(a->dout, a->rows * a->dim, 4);
    l.ops[2] = vk_out(a->dtable, a->vocab * a->dim, 4);
    return vk_run_flat(d, &l, (uint64_t)a->dim);
}
