/* Dynamic loss scaling (see kiln/loss_scale.h).
 *
 * The scale is kept as the f32 value actually used as backward's seed, so a checkpoint that
 * saves it (as a decimal that round-trips an f32) resumes with exactly the same seed. The
 * device flag is the only thing read back, once per step: everything else (the check, the
 * skip inside the Adam kernel, clearing the flag) is recorded without a wait. */
#include <math.h>
#include <stdlib.h>

#include "core/internal.h"
#include "kiln/loss_scale.h"

struct kiln_loss_scaler {
    kiln_ctx *ctx;
    kiln_loss_scale_opts opts;
    float scale;
    int64_t clean_steps, skipped_steps;
    kiln_tensor *flag; /* i32 scalar: set by kiln_check_finite, cleared after each read */
};

kiln_loss_scale_opts kiln_loss_scale_defaults(void) {
    kiln_loss_scale_opts o = {.init = 65536.0, .growth = 2.0, .backoff = 0.5, .interval = 2000};
    return o;
}

/* A scale and its inverse (the optimizer's unscale factor) must both be normal f32s, so
 * S stays within [2^-126, 2^126]: a subnormal 1/S would be flushed to 0 by many GPUs. */
#define SCALE_MIN 0x1p-126
#define SCALE_MAX 0x1p126
static int valid_scale(double s) { return isfinite(s) && s >= SCALE_MIN && s <= SCALE_MAX; }

static kiln_status check_loss_scale_opts(const kiln_loss_scale_opts *o) {
    if (!valid_scale(o->init))
        return kiln_set_error(KILN_ERR_ARGUMENT,
                              "loss scale: the initial scale must lie in [2^-126, 2^126], got %g", o->init);
    if (!(o->growth >= 1.0) || !isfinite(o->growth))
        return kiln_set_error(KILN_ERR_ARGUMENT, "loss scale: growth must be a finite number >= 1, got %g",
                              o->growth);
    if (!(o->backoff > 0.0 && o->backoff <= 1.0))
        return kiln_set_error(KILN_ERR_ARGUMENT, "loss scale: backoff must lie in (0, 1], got %g", o->backoff);
    if (o->interval < 1)
        return kiln_set_error(KILN_ERR_ARGUMENT, "loss scale: the growth interval must be >= 1 step, got %lld",
                              (long long)o->interval);
    return KILN_OK;
}

kiln_loss_scaler *kiln_loss_scaler_new(kiln_ctx *ctx, const kiln_loss_scale_opts *opts) {
    if (!ctx) return kiln_fail(KILN_ERR_ARGUMENT, "kiln_loss_scaler_new: ctx is NULL");
    kiln_loss_scale_opts o = opts ? *opts : kiln_loss_scale_defaults();
    if (check_loss_scale_opts(&o)) return NULL;
    kiln_loss_scaler *ls = calloc(1, sizeof *ls);
    if (!ls) return kiln_fail(KILN_ERR_MEMORY, "out of host memory");
    ls->ctx = ctx;
    ls->opts = o;
    ls->scale = (float)o.init;
    /* kiln_tensor_new zero-fills: the flag starts clear */
    ls->flag = kiln_tensor_new(ctx, KILN_I32, 0, NULL);
    if (!ls->flag) {
        free(ls);
        return NULL;
    }
    return ls;
}

void kiln_loss_scaler_free(kiln_loss_scaler *ls) {
    if (!ls) return;
    kiln_tensor_free(ls->flag);
    free(ls);
}

float kiln_loss_scale_value(const kiln_loss_scaler *ls) { return ls ? ls->scale : 1.0f; }

kiln_tensor *kiln_loss_scaler_flag(kiln_loss_scaler *ls) { return ls ? ls->flag : NULL; }

kiln_status kiln_loss_scaler_check(kiln_loss_scaler *ls, kiln_tensor *const *grads, int count) {
    if (!ls || (!grads && count > 0) || count < 0)
        return kiln_set_error(KILN_ERR_ARGUMENT, "kiln_loss_scaler_check: needs a scaler and %d gradients", count);
    for (int i = 0; i < count; i++) {
        if (!grads[i]) continue;
        kiln_status s = kiln_check_finite(grads[i], ls->flag);
        if (s) return s;
    }
    return KILN_OK;
}

kiln_status kiln_loss_scaler_update(kiln_loss_scaler *ls, int *skipped) {
    if (!ls) return kiln_set_error(KILN_ERR_ARGUMENT, "kiln_loss_scaler_update: scaler is NULL");
    int32_t flag = 0;
    kiln_status s = kiln_download(ls->flag, &flag, sizeof flag);
    if (s) return s;
    if (skipped) *skipped = flag != 0;
    if (flag) {
        double next = (double)ls->scale * ls->opts.backoff;
        if (next < SCALE_MIN)
            return kiln_set_error(KILN_ERR_STATE,
                                  "loss scale: the gradients hold inf/NaN even at scale %g (after %lld skipped "
                                  "steps): the forward pass itself overflows or diverged",
                                  (double)ls->scale, (long long)ls->skipped_steps + 1);
        ls->scale = (float)next;
        ls->clean_steps = 0;
        ls->skipped_steps++;
        /* recorded, not waited for: the next step's checks run after it */
        return kiln_zero(ls->flag);
    }
    if (++ls->clean_steps >= ls->opts.interval) {
        double next = (double)ls->scale * ls->opts.growth;
        /* at the top of its range the scale stays */
        if (next <= SCALE_MAX) ls->scale = (float)next;
        ls->clean_steps = 0;
    }
    return KILN_OK;
}

kiln_status kiln_loss_scaled_step(kiln_loss_scaler *ls, kiln_adam *opt,
                                  const kiln_adam_step_opts *step, int *skipped) {
    if (!ls || !opt || !step)
        return kiln_set_error(KILN_ERR_ARGUMENT, "kiln_loss_scaled_step: scaler, optimizer and step options are required");
    int n = kiln_adam_count(opt);
    for (int i = 0; i < n; i++) {
        kiln_tensor *g = kiln_adam_grad(opt, i);
        if (!g) continue;
        kiln_status s = kiln_check_finite(g, ls->flag);
        if (s) return s;
    }
    kiln_adam_step_opts scaled = *step;
    scaled.skip_flag = ls->flag;
    scaled.grad_unscale = (float)(1.0 / (double)ls->scale);
    kiln_status s = kiln_adam_step(opt, &scaled);
    if (s) return s;
    int overflow = 0;
    if ((s = kiln_loss_scaler_update(ls, &overflow))) return s;
    if (overflow) kiln_adam_uncount_step(opt);
    if (skipped) *skipped = overflow;
    return KILN_OK;
}

kiln_loss_scale_state kiln_loss_scaler_state(const kiln_loss_scaler *ls) {
    kiln_loss_scale_state st = {.scale = 1.0, .clean_steps = 0, .skipped_steps = 0};
    if (ls) {
        st.scale = ls->scale;
        st.clean_steps = ls->clean_steps;
        st.skipped_steps = ls->skipped_steps;
    }
    return st;
}

kiln_status kiln_loss_scaler_set_state(kiln_loss_scaler *ls, const kiln_loss_scale_state *st) {
    if (!ls || !st) return kiln_set_error(KILN_ERR_ARGUMENT, "kiln_loss_scaler_set_state: NULL argument");
    if (!valid_scale(st->scale) || (double)(float)st->scale != st->scale)
        return kiln_set_error(KILN_ERR_ARGUMENT, "loss scale state: the scale %g is not an f32 in [2^-126, 2^126]",
                              st->scale);
    if (st->clean_steps < 0 || st->skipped_steps < 0)
        return kiln_set_error(KILN_ERR_ARGUMENT, "loss scale state: negative counters (%lld clean, %lld skipped)",
                              (long long)st->clean_steps, (long long)st->skipped_steps);
    ls->scale = (float)st->scale;
    ls->clean_steps = st->clean_steps;
    ls->skipped_steps = st->skipped_steps;
    return KILN_OK;
}
