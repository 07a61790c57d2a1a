/* Host side of inverted dropout (kiln_dropout_args): one kernel whose mask is regenerated
 * from the counter-based RNG, forward and backward; its "_f16" build for f16 data. */
#include "push.h"
#include "vk_internal.h"

typedef struct { DROPOUT_PUSH } dropout_push;

/* The dropout kernel: forward y = mask(x), or backward dx += mask(dy) (accumulating). */
static kiln_status vk_dropout(vk_dev *d, const kiln_dropout_args *a, kiln_ref in, kiln_ref out, int backward) {
    vk_shader_id shader;
    kiln_status s = vk_variant(d, VK_SHADER_dropout, a->dtype, &shader);
    if (s) return s;
    uint32_t es = vk_elem(a->dtype);
    dropout_push p = {.n = vk_u32(a->n),
                      .prob = a->prob,
                      .keep = 1.0f - a->prob,
                      .seed_lo = (u32)a->seed,
                      .seed_hi = (u32)(a->seed >> 32),
                      .stream_lo = (u32)a->stream,
                      .stream_hi = (u32)(a->stream >> 32),
                      .accumulate = (u32)backward};
    vk_launch l = {.shader = shader, .n_ops = VK_OPS(p), .push = &p, .push_bytes = sizeof p};
    l.ops[VK_OP(dropout, x)] = vk_in(in, a->n, es);
    l.ops[VK_OP(dropout, y)] = vk_out(out, a->n, es);
    return vk_run_flat(d, &l, (uint64_t)a->n);
}

kiln_status vk_dropout_fwd(void *dev, const kiln_dropout_args *a) { return vk_dropout(vk_of(dev), a, a->x, a->y, 0); }

kiln_status vk_dropout_bwd(void *dev, const kiln_dropout_args *a) { return vk_dropout(vk_of(dev), a, a->dy, a->dx, 1); }
