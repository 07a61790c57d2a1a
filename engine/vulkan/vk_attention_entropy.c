/* Host side of the attention entropy (kiln_entropy_args): the forward is the segmented
 * reduction of reduce.comp (vk_reduce.c) over p log p, the backward entropy_bwd.comp. */
#include "push.h"
#include "vk_internal.h"

typedef struct { ENTROPY_BWD_PUSH } entropy_bwd_push;

kiln_status vk_entropy_fwd(void *dev, const kiln_entropy_args *a) {
    vk_dev *d = vk_of(dev);
    float scale = (float)(-1.0 / (double)(a->batch * a->tq));
    return vk_reduce_segmented(d, a->p, a->dtype, a->out, a->batch, a->heads, a->tq * a->tk, KILN_ABI_VK_REDUCE_PLOGP, scale, 0);
}

kiln_status vk_entropy_bwd(void *dev, const kiln_entropy_args *a) {
    vk_dev *d = vk_of(dev);
    vk_shader_id shader;
    kiln_status s = vk_variant(d, VK_SHADER_entropy_bwd, a->dtype, &shader);
    if (s) return s;
    uint32_t es = vk_elem(a->dtype);
    int64_t n = a->batch * a->heads * a->tq * a->tk;
    entropy_bwd_push p = {.n = vk_u32(n),
                          .heads = vk_u32(a->heads),
                          .inner = vk_u32(a->tq * a->tk),
                          .scale = (float)(-1.0 / (double)(a->batch * a->tq))};
    vk_launch l = {.shader = shader, .n_ops = VK_OPS(p), .push = &p, .push_bytes = sizeof p};
    l.ops[VK_OP(entropy_bwd, p)] = vk_in(a->p, n, es);
    l.ops[VK_OP(entropy_bwd, dout)] = vk_in(a->dout, a->heads, 4);
    l.ops[VK_OP(entropy_bwd, dp)] = vk_out(a->dp, n, es);
    return vk_run_flat(d, &l, (uint64_t)n);
}
