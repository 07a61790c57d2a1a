/* Host side of the optimizer kernels: the clipping coefficient (kiln_clip_args) and the
 * Adam(W) update (kiln_adam_args). */
#include "push.h"
#include "vk_internal.h"

typedef struct { CLIP_COEF_PUSH } clip_coef_push;
typedef struct { ADAM_PUSH } adam_push;

kiln_status vk_clip_coef(void *dev, const kiln_clip_args *a) {
    vk_dev *d = vk_of(dev);
    clip_coef_push p = {.clip = a->clip, .unscale = a->unscale};
    vk_launch l = {.shader = VK_SHADER_clip_coef, .n_ops = VK_OPS(p), .push = &p, .push_bytes = sizeof p};
    l.ops[VK_OP(clip_coef, sumsq)] = vk_in(a->sumsq, 1, 4);
    l.ops[VK_OP(clip_coef, coef)] = vk_out(a->coef, 1, 4);
    l.ops[VK_OP(clip_coef, norm)] = vk_out(a->norm, 1, 4);
    l.groups[0] = l.groups[1] = l.groups[2] = 1;
    return vk_dispatch(d, &l);
}

kiln_status vk_adam_piece(void *dev, const kiln_adam_args *a) {
    vk_dev *d = vk_of(dev);
    if (a->grad_dtype != KILN_F32 && a->grad_dtype != KILN_F16)
        return kiln_set_error(KILN_ERR_DTYPE, "adam: gradients must be f32 or f16, got %s", kiln_dtype_name(a->grad_dtype));
    if ((a->grad_dtype == KILN_F16 || vk_has(a->half_copy)) && vk_require_f16(d, "adam")) return kiln_error_status();
    adam_push p = {.n = vk_u32(a->n),
                   .grad_f16 = a->grad_dtype == KILN_F16,
                   .lr = a->lr,
                   .beta1 = a->beta1,
                   .beta2 = a->beta2,
                   .eps = a->eps,
                   .weight_decay = a->weight_decay,
                   .bc1 = a->bc1,
                   .bc2 = a->bc2,
                   .decoupled = a->decoupled != 0};
    vk_launch l = {.shader = VK_SHADER_adam, .n_ops = VK_OPS(p), .push = &p, .push_bytes = sizeof p};
    l.ops[VK_OP(adam, p)] = vk_out(a->param, a->n, 4);
    l.ops[VK_OP(adam, grad)] = vk_in(a->grad, a->n, a->grad_dtype == KILN_F16 ? 2 : 4);
    l.ops[VK_OP(adam, m)] = vk_out(a->m, a->n, 4);
    l.ops[VK_OP(adam, v)] = vk_out(a->v, a->n, 4);
    l.ops[VK_OP(adam, half_copy)] = vk_out(a->half_copy, a->n, 2);
    l.ops[VK_OP(adam, coef)] = vk_in(a->coef, 1, 4);
    l.ops[VK_OP(adam, skip)] = vk_in(a->skip, 1, 4);
    /* one invocation per 32-bit word of half_copy (two elements) */
    return vk_run_flat(d, &l, (uint64_t)a->n / 2 + 2);
}
