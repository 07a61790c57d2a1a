/* Adam and AdamW over a list of f32 parameters.
 *
 * A step is recorded entirely on the device, so a training loop never waits for it:
 *   1. sumsq = 0; sumsq += sum g^2 over every gradient        (reduce kernel, square = 1)
 *   2. coef = unscale * min(1, clip / norm), norm = ||g||*unscale   (clip_coef kernel)
 *   3. per parameter: the Adam update reading coef and the skip flag  (adam kernel)
 * Only the bias corrections bc1 = 1 - b1^t and bc2 = 1 - b2^t depend on the step counter,
 * and the host knows it, so they travel as kernel arguments.
 *
 * Parameters whose gradient was never allocated (no backward reached them) are left alone,
 * moments included, as torch.optim does for a parameter whose .grad is None. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"

struct kiln_adam {
    kiln_ctx *ctx;
    kiln_adam_opts opts;
    int count;
    kiln_tensor **params;
    kiln_tensor **m, **v;
    kiln_tensor **copies;  /* f16 working copies, or NULL */
    unsigned char *decay;  /* per parameter: weight decay on (1) or off (0) */
    int64_t steps;
    kiln_tensor *sumsq;    /* f32 scalar: sum of squares of the (scaled) gradients */
    kiln_tensor *coef;     /* f32 scalar: the factor every gradient is multiplied by */
    kiln_tensor *norm;     /* f32 scalar: the unscaled global norm, before clipping */
};

kiln_adam_opts kiln_adam_defaults(void) {
    kiln_adam_opts o = {.beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f, .weight_decay = 0.0f, .decoupled = 1};
    return o;
}

static kiln_status check_adam_opts(const kiln_adam_opts *o) {
    if (!(o->beta1 >= 0 && o->beta1 < 1) || !(o->beta2 >= 0 && o->beta2 < 1))
        return kiln_set_error(KILN_ERR_ARGUMENT,
                              "adam: betas must lie in [0, 1), got beta1 %g and beta2 %g",
                              (double)o->beta1, (double)o->beta2);
    if (!(o->eps >= 0) || !(o->weight_decay >= 0))
        return kiln_set_error(KILN_ERR_ARGUMENT,
                              "adam: eps and weight_decay must be >= 0, got %g and %g",
                              (double)o->eps, (double)o->weight_decay);
    return KILN_OK;
}

kiln_adam *kiln_adam_new(kiln_ctx *ctx, kiln_tensor *const *params, int count,
                         const kiln_adam_opts *opts) {
    if (!ctx || !params || count <= 0)
        return kiln_fail(KILN_ERR_ARGUMENT, "kiln_adam_new: needs a context and at least one parameter (got %d)", count);
    kiln_adam_opts o = opts ? *opts : kiln_adam_defaults();
    if (check_adam_opts(&o)) return NULL;
    for (int i = 0; i < count; i++) {
        if (!params[i]) return kiln_fail(KILN_ERR_ARGUMENT, "kiln_adam_new: parameter %d is NULL", i);
        if (params[i]->dtype != KILN_F32)
            return kiln_fail(KILN_ERR_DTYPE, "kiln_adam_new: parameter %d is %s; master weights must be f32 "
                             "(use kiln_adam_set_half_copies for f16 working copies)",
                             i, kiln_dtype_name(params[i]->dtype));
        if (params[i]->ctx != ctx)
            return kiln_fail(KILN_ERR_ARGUMENT, "kiln_adam_new: parameter %d belongs to another context", i);
    }
    kiln_adam *opt = calloc(1, sizeof *opt);
    if (!opt) return kiln_fail(KILN_ERR_MEMORY, "out of host memory");
    opt->ctx = ctx;
    opt->opts = o;
    opt->count = count;
    opt->params = malloc((size_t)count * sizeof *opt->params);
    opt->m = calloc((size_t)count, sizeof *opt->m);
    opt->v = calloc((size_t)count, sizeof *opt->v);
    opt->decay = malloc((size_t)count);
    if (!opt->params || !opt->m || !opt->v || !opt->decay) {
        kiln_adam_free(opt);
        return kiln_fail(KILN_ERR_MEMORY, "out of host memory");
    }
    memcpy(opt->params, params, (size_t)count * sizeof *opt->params);
    memset(opt->decay, 1, (size_t)count);
    for (int i = 0; i < count; i++) {
        /* kiln_tensor_new zero-fills: moments start at 0 */
        opt->m[i] = kiln_tensor_new(ctx, KILN_F32, params[i]->ndim, params[i]->shape);
        opt->v[i] = opt->m[i] ? kiln_tensor_new(ctx, KILN_F32, params[i]->ndim, params[i]->shape) : NULL;
        if (!opt->v[i]) {
            kiln_adam_free(opt);
            return NULL;
        }
    }
    opt->sumsq = kiln_tensor_new(ctx, KILN_F32, 0, NULL);
    opt->coef = opt->sumsq ? kiln_tensor_new(ctx, KILN_F32, 0, NULL) : NULL;
    opt->norm = opt->coef ? kiln_tensor_new(ctx, KILN_F32, 0, NULL) : NULL;
    if (!opt->norm) {
        kiln_adam_free(opt);
        return NULL;
    }
    return opt;
}

void kiln_adam_free(kiln_adam *opt) {
    if (!opt) return;
    for (int i = 0; i < opt->count; i++) {
        if (opt->m) kiln_tensor_free(opt->m[i]);
        if (opt->v) kiln_tensor_free(opt->v[i]);
    }
    kiln_tensor_free(opt->sumsq);
    kiln_tensor_free(opt->coef);
    kiln_tensor_free(opt->norm);
    free(opt->params);
    free(opt->m);
    free(opt->v);
    free(opt->copies);
    free(opt->decay);
    free(opt);
}

void kiln_adam_set_decay(kiln_adam *opt, int index, int decay) {
    if (!opt || index < 0 || index >= opt->count) return;
    opt->decay[index] = decay != 0;
}

kiln_status kiln_adam_set_half_copies(kiln_adam *opt, kiln_tensor *const *copies) {
    if (!opt) return kiln_set_error(KILN_ERR_ARGUMENT, "kiln_adam_set_half_copies: optimizer is NULL");
    if (!copies) { /* back to plain f32 training */
        free(opt->copies);
        opt->copies = NULL;
        return KILN_OK;
    }
    for (int i = 0; i < opt->count; i++) {
        const kiln_tensor *c = copies[i], *p = opt->params[i];
        if (!c) return kiln_set_error(KILN_ERR_ARGUMENT, "kiln_adam_set_half_copies: copy %d is NULL", i);
        if (c->dtype != KILN_F16)
            return kiln_set_error(KILN_ERR_DTYPE, "kiln_adam_set_half_copies: copy %d is %s; working copies are f16",
                                  i, kiln_dtype_name(c->dtype));
        if (kiln_numel(c) != kiln_numel(p) || c->ctx != p->ctx) {
            char cs[64], ps[64];
            return kiln_set_error(KILN_ERR_SHAPE,
                                  "kiln_adam_set_half_copies: copy %d has shape %s but its parameter has %s "
                                  "(or lives in another context)",
                                  i, kiln_shape_str(c, cs, sizeof cs), kiln_shape_str(p, ps, sizeof ps));
        }
    }
    if (!opt->copies) {
        opt->copies = malloc((size_t)opt->count * sizeof *opt->copies);
        if (!opt->copies) return kiln_set_error(KILN_ERR_MEMORY, "out of host memory");
    }
    memcpy(opt->copies, copies, (size_t)opt->count * sizeof *opt->copies);
    return KILN_OK;
}

/* The gradient the step reads for parameter i: the f16 copy's in mixed precision. */
static const kiln_tensor *param_grad(const kiln_adam *opt, int i) {
    return opt->copies ? opt->copies[i]->grad : opt->params[i]->grad;
}

/* sumsq += sum g^2 for one gradient, f32 or f16 (the reduce kernel reads either and
 * accumulates in f32). */
static kiln_status add_squares(kiln_adam *opt, const kiln_tensor *g) {
    kiln_reduce_args r = {
        .x = kiln_ref_of(g),
        .out = kiln_ref_of(opt->sumsq),
        .n = kiln_numel(g),
        .alpha = 1.0f,
        .square = 1,
        .dtype = g->dtype,
    };
    return KILN_CALL(opt->ctx, reduce, &r);
}

kiln_status kiln_adam_step(kiln_adam *opt, const kiln_adam_step_opts *step) {
    if (!opt || !step) return kiln_set_error(KILN_ERR_ARGUMENT, "kiln_adam_step: optimizer and step options are required");
    kiln_ctx *ctx = opt->ctx;
    const kiln_tensor *skip = step->skip_flag;
    if (skip && (skip->dtype != KILN_I32 || kiln_numel(skip) != 1 || skip->ctx != ctx))
        return kiln_set_error(KILN_ERR_ARGUMENT,
                              "kiln_adam_step: the skip flag must be an i32 scalar of the optimizer's context");
    if (!(step->clip_norm >= 0) || !isfinite(step->lr))
        return kiln_set_error(KILN_ERR_ARGUMENT, "kiln_adam_step: lr must be finite and clip_norm >= 0 (got %g, %g)",
                              (double)step->lr, (double)step->clip_norm);
    for (int i = 0; i < opt->count; i++) {
        const kiln_tensor *g = param_grad(opt, i);
        if (g && kiln_numel(g) != kiln_numel(opt->params[i]))
            return kiln_set_error(KILN_ERR_SHAPE, "kiln_adam_step: gradient %d has %lld elements, its parameter %lld",
                                  i, (long long)kiln_numel(g), (long long)kiln_numel(opt->params[i]));
    }

    /* 1-2: the global norm and the coefficient, on the device */
    kiln_status s = kiln_zero(opt->sumsq);
    for (int i = 0; s == KILN_OK && i < opt->count; i++) {
        const kiln_tensor *g = param_grad(opt, i);
        if (g) s = add_squares(opt, g);
    }
    if (s) return s;
    float unscale = step->grad_unscale != 0 ? step->grad_unscale : 1.0f;
    kiln_clip_args c = {
        .sumsq = kiln_ref_of(opt->sumsq),
        .coef = kiln_ref_of(opt->coef),
        .norm = kiln_ref_of(opt->norm),
        .clip = step->clip_norm,
        .unscale = unscale,
    };
    if ((s = KILN_CALL(ctx, clip_coef, &c))) return s;

    /* 3: the updates. The counter counts this step even when the skip flag turns out set:
     * the caller, who reads the flag, undoes it with kiln_adam_uncount_step. */
    opt->steps++;
    const kiln_adam_opts *o = &opt->opts;
    double t = (double)opt->steps;
    float bc1 = (float)(1.0 - pow((double)o->beta1, t));
    float bc2 = (float)(1.0 - pow((double)o->beta2, t));
    /* RAdam through the same kernels, p -= lr (m / bc1) / (sqrt(v / bc2) + eps) and
     * p -= lr wd p: the rectified step is Adam's at lr r_t (its decoupled decay divided by r_t
     * to stay lr wd); the momentum step takes bc2 = 1e30 and eps = 1, for which
     * sqrt(v / bc2) < 2^-25 for any v below 1e15, so the denominator is exactly 1 in f32 */
    float lr = step->lr, eps = o->eps, decay_scale = 1.0f;
    if (o->rectified) {
        double b2t = pow((double)o->beta2, t), rho_inf = 2.0 / (1.0 - o->beta2) - 1.0;
        double rho = rho_inf - 2.0 * t * b2t / (1.0 - b2t);
        if (rho > 5.0) {
            double r = sqrt((rho - 4.0) * (rho - 2.0) * rho_inf / ((rho_inf - 4.0) * (rho_inf - 2.0) * rho));
            lr = (float)(step->lr * r);
            decay_scale = o->decoupled ? (float)(1.0 / r) : 1.0f;
        } else {
            bc2 = 1e30f;
            eps = 1.0f;
        }
    }
    for (int i = 0; i < opt->count; i++) {
        const kiln_tensor *g = param_grad(opt, i);
        if (!g) continue;
        kiln_adam_args a = {
            .param = kiln_ref_of(opt->params[i]),
            .grad = kiln_ref_of(g),
            .m = kiln_ref_of(opt->m[i]),
            .v = kiln_ref_of(opt->v[i]),
            .half_copy = kiln_ref_of(opt->copies ? opt->copies[i] : NULL),
            .coef = kiln_ref_of(opt->coef),
            .skip = kiln_ref_of(skip),
            .grad_dtype = g->dtype,
            .n = kiln_numel(opt->params[i]),
            .lr = lr,
            .beta1 = o->beta1,
            .beta2 = o->beta2,
            .eps = eps,
            .weight_decay = opt->decay[i] ? o->weight_decay * decay_scale : 0.0f,
            .bc1 = bc1,
            .bc2 = bc2,
            .decoupled = o->decoupled,
        };
        if ((s = KILN_CALL(ctx, adam, &a))) return s;
    }
    return KILN_OK;
}

int kiln_adam_count(const kiln_adam *opt) { return opt ? opt->count : 0; }

kiln_tensor *kiln_adam_grad(kiln_adam *opt, int index) {
    if (!opt || index < 0 || index >= opt->count) return NULL;
    return opt->copies ? opt->copies[index]->grad : opt->params[index]->grad;
}

kiln_tensor *kiln_adam_grad_norm(kiln_adam *opt) { return opt ? opt->norm : NULL; }

kiln_tensor *kiln_adam_m(kiln_adam *opt, int index) {
    if (!opt || index < 0 || index >= opt->count)
        return kiln_fail(KILN_ERR_RANGE, "kiln_adam_m: parameter index %d out of range [0, %d)", index,
                         opt ? opt->count : 0);
    return opt->m[index];
}

kiln_tensor *kiln_adam_v(kiln_adam *opt, int index) {
    if (!opt || index < 0 || index >= opt->count)
        return kiln_fail(KILN_ERR_RANGE, "kiln_adam_v: parameter index %d out of range [0, %d)", index,
                         opt ? opt->count : 0);
    return opt->v[index];
}

int64_t kiln_adam_steps(const kiln_adam *opt) { return opt ? opt->steps : 0; }

void kiln_adam_set_steps(kiln_adam *opt, int64_t steps) {
    if (opt && steps >= 0) opt->steps = steps;
}

void kiln_adam_uncount_step(kiln_adam *opt) {
    if (opt && opt->steps > 0) opt->steps--;
}
