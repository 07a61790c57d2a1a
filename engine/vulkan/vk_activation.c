/* Host side of the activations (kiln_act_args): y = f(x) and dx += dy * f'(x), their "_f16"
 * builds for f16 data (vk_variant). */
#include "push.h"
#include "vk_internal.h"

typedef struct { ACT_FWD_PUSH } act_fwd_push;
typedef struct { ACT_BWD_PUSH } act_bwd_push;

kiln_status vk_act_fwd_piece(void *dev, const kiln_act_args *a) {
    vk_dev *d = vk_of(dev);
    if (!((a->kind >= KILN_ACT_GELU && a->kind <= KILN_ACT_RELU2) || a->kind == KILN_ACT_SQRT))
        return kiln_set_error(KILN_ERR_ARGUMENT, "vulkan act_fwd: unknown activation kind %d", a->kind);
    vk_shader_id shader;
    kiln_status s = vk_variant(d, VK_SHADER_act_fwd, a->dtype, &shader);
    if (s) return s;
    uint32_t es = vk_elem(a->dtype);
    act_fwd_push p = {.n = vk_u32(a->n), .kind = (u32)a->kind}; /* KILN_ABI_ACT_* */
    vk_launch l = {.shader = shader, .n_ops = VK_OPS(p), .push = &p, .push_bytes = sizeof p};
    l.ops[VK_OP(act_fwd, x)] = vk_in(a->x, a->n, es);
    l.ops[VK_OP(act_fwd, y)] = vk_out(a->y, a->n, es);
    return vk_run_flat(d, &l, (uint64_t)a->n);
}

kiln_status vk_act_bwd_piece(void *dev, const kiln_act_args *a) {
    vk_dev *d = vk_of(dev);
    if (!(a->kind >= KILN_ACT_GELU && a->kind <= KILN_ACT_RELU2))
        return kiln_set_error(KILN_ERR_ARGUMENT, "vulkan act_bwd: activation kind %d has no backward", a->kind);
    vk_shader_id shader;
    kiln_status s = vk_variant(d, VK_SHADER_act_bwd, a->dtype, &shader);
    if (s) return s;
    uint32_t es = vk_elem(a->dtype);
    act_bwd_push p = {.n = vk_u32(a->n), .kind = (u32)a->kind}; /* KILN_ABI_ACT_* */
    vk_launch l = {.shader = shader, .n_ops = VK_OPS(p), .push = &p, .push_bytes = sizeof p};
    l.ops[VK_OP(act_bwd, x)] = vk_in(a->x, a->n, es);
    l.ops[VK_OP(act_bwd, dy)] = vk_in(a->dy, a->n, es);
    l.ops[VK_OP(act_bwd, dx)] = vk_out(a->dx, a->n, es);
    return vk_run_flat(d, &l, (uint64_t)a->n);
}
