/* The verification cases of the optimizer (kiln/verify.h): two Adam steps over a weight from
 * given gradients (the adam and clip_coef kernels and the global gradient norm), as AdamW,
 * Adam with L2 decay and RAdam, with and without clipping. Forward-only: the output is the
 * weight after the steps. Run by `kiln verify` and tests/test_op_optim.c. The mixed-precision
 * path (f16 copies written back) runs in `kiln verify`'s whole-model check, gpt/train_step. */
#include "kiln/kiln.h"
#include "verify/cases.h"

typedef struct adam_param {
    int decoupled, rectified;
    float weight_decay, clip;
} adam_param;

/* in = {weight, gradient}: the gradient reaches a copy of the weight through backward of
 * sum(copy * gradient), which the optimizer then reads, as in training. */
static kiln_tensor *build_adam(kiln_tensor **in, const void *param) {
    const adam_param *p = param;
    kiln_ctx *ctx = in[0]->ctx;
    kiln_tensor *w = kiln_tensor_new(ctx, KILN_F32, in[0]->ndim, in[0]->shape), *out = NULL;
    kiln_adam *opt = NULL;
    int grad = kiln_grad_enabled(ctx);
    kiln_set_grad_enabled(ctx, 1);
    if (w && kiln_copy(w, in[0]) == KILN_OK) {
        kiln_set_requires_grad(w, 1);
        kiln_tensor *loss = kiln_sum(kiln_mul(w, in[1]));
        kiln_adam_opts o = kiln_adam_defaults();
        o.beta2 = 0.99f, o.decoupled = p->decoupled, o.rectified = p->rectified, o.weight_decay = p->weight_decay;
        kiln_adam_step_opts step = {.lr = 1e-2f, .clip_norm = p->clip};
        if (loss && kiln_backward(loss, 1.0f) == KILN_OK && (opt = kiln_adam_new(ctx, &w, 1, &o)) &&
            kiln_adam_step(opt, &step) == KILN_OK && kiln_adam_step(opt, &step) == KILN_OK) {
            out = kiln_tensor_temp(ctx, KILN_F32, w->ndim, w->shape);
            if (out && kiln_copy(out, w) != KILN_OK) out = NULL;
        }
    }
    kiln_set_grad_enabled(ctx, grad);
    kiln_adam_free(opt);
    kiln_tensor_free(w);
    return out;
}

static const adam_param ADAMW_CLIP = {.decoupled = 1, .weight_decay = 0.1f, .clip = 0.5f},
                        ADAM_L2 = {.weight_decay = 0.05f}, RADAM = {.decoupled = 1, .rectified = 1, .weight_decay = 0.1f};
/* no_f16: the optimizer reads f32 weights (the masters of mixed precision) */
static const kiln_verify_case cases[] = {
    {.name = "adamw_clipped", .quick = 1, .build = build_adam, .param = &ADAMW_CLIP, .n_in = 2,
     .in = {{.dtype = KILN_F32, .ndim = 2, .shape = {37, 29}},
            {.dtype = KILN_F32, .ndim = 2, .shape = {37, 29}, .init = KILN_INIT_NORMAL, .hi = 0.1f}},
     .no_grad = 1, .no_f16 = 1, .fwd_tol = 1e-12},
    {.name = "adam_l2", .build = build_adam, .param = &ADAM_L2, .n_in = 2,
     .in = {{.dtype = KILN_F32, .ndim = 1, .shape = {1001}}, {.dtype = KILN_F32, .ndim = 1, .shape = {1001}}},
     .no_grad = 1, .no_f16 = 1, .fwd_tol = 1e-12},
    {.name = "radam", .build = build_adam, .param = &RADAM, .n_in = 2,
     .in = {{.dtype = KILN_F32, .ndim = 2, .shape = {5, 67}}, {.dtype = KILN_F32, .ndim = 2, .shape = {5, 67}}},
     .no_grad = 1, .no_f16 = 1, .fwd_tol = 1e-12},
};
const kiln_verify_group kiln_verify_group_optim =
    {.name = "optim", .cases = cases, .count = (int)(sizeof cases / sizeof cases[0])};
