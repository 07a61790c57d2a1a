/* Host side of y = s * x and dx += s * dy (kiln_smul_args); "_f16" builds for f16 data. */
#include "push.h"
#include "vk_internal.h"

typedef struct { SMUL_FWD_PUSH } smul_fwd_push;
typedef struct { SMUL_BWD_PUSH } smul_bwd_push;

kiln_status vk_smul_fwd(void *dev, const kiln_smul_args *a) {
    vk_dev *d = vk_of(dev);
    vk_shader_id shader;
    kiln_status s = vk_variant(d, VK_SHADER_smul_fwd, a->dtype, &shader);
    if (s) return s;
    uint32_t es = vk_elem(a->dtype);
    smul_fwd_push p = {.n = vk_u32(a->n), .s = a->s};
    vk_launch l = {.shader = shader, .n_ops = VK_OPS(p), .push = &p, .push_bytes = sizeof p};
    l.ops[VK_OP(smul_fwd, x)] = vk_in(a->x, a->n, es);
    l.ops[VK_OP(smul_fwd, y)] = vk_out(a->y, a->n, es);
    return vk_run_flat(d, &l, (uint64_t)a->n);
}

kiln_status vk_smul_bwd(void *dev, const kiln_smul_args *a) {
    vk_dev *d = vk_of(dev);
    vk_shader_id shader;
    kiln_status s = vk_variant(d, VK_SHADER_smul_bwd, a->dtype, &shader);
    if (s) return s;
    uint32_t es = vk_elem(a->dtype);
    smul_bwd_push p = {.n = vk_u32(a->n), .s = a->s};
    vk_launch l = {.shader = shader, .n_ops = VK_OPS(p), .push = &p, .push_bytes = sizeof p};
    l.ops[VK_OP(smul_bwd, dy)] = vk_in(a->dy, a->n, es);
    l.ops[VK_OP(smul_bwd, dx)] = vk_out(a->dx, a->n, es);
    return vk_run_flat(d, &l, (uint64_t)a->n);
}
