/* The GPT's hooks for the stability options: Admin's omega init, sigma-reparam's power
 * iteration, the attention temperature, and the probes monitoring reads (per-layer
 * attention entropy and gradient norms). The formulas live in the block (model/block.h). */
#include <math.h>
#include <stdlib.h>

#include "model/gpt/gpt.h"
#include "model/gpt/gpt_internal.h"

/* Runs f with grad and training off (an evaluation-mode pass), restoring both after. */
typedef struct eval_mode {
    int grad, training;
} eval_mode;

static eval_mode eval_mode_enter(kiln_ctx *ctx) {
    eval_mode e = {.grad = kiln_grad_enabled(ctx), .training = kiln_training(ctx)};
    kiln_set_grad_enabled(ctx, 0);
    kiln_set_training(ctx, 0);
    return e;
}

static void eval_mode_leave(kiln_ctx *ctx, eval_mode e) {
    kiln_set_grad_enabled(ctx, e.grad);
    kiln_set_training(ctx, e.training);
}

kiln_status gpt_admin_profile(gpt_model *m, kiln_tensor *ids, float *omegas) {
    if (m->block.o.residual != BLOCK_RESIDUAL_ADMIN)
        return kiln_set_error(KILN_ERR_ARGUMENT, "admin profiling: the model's residual is not admin");
    if (m->dtype != KILN_F32)
        return kiln_set_error(KILN_ERR_ARGUMENT, "admin profiling: run it on the f32 model, before mixed precision");
    if (!ids || gpt_check_token_ids(m, ids, 0)) return kiln_error_status();
    eval_mode e = eval_mode_enter(m->ctx);
    block_admin_profile profile = {.ratio = 1.0f, .omegas = omegas};
    block_pass pass = {.admin = &profile};
    kiln_tensor *x = gpt_trunk(m, ids, NULL, NULL, &pass);
    kiln_status s = x ? KILN_OK : kiln_error_status();
    eval_mode_leave(m->ctx, e);
    kiln_step_reset(m->ctx);
    return s;
}

kiln_status gpt_admin_closed_form(gpt_model *m) {
    if (m->block.o.residual != BLOCK_RESIDUAL_ADMIN)
        return kiln_set_error(KILN_ERR_ARGUMENT, "admin init: the model's residual is not admin");
    float omega = block_admin_closed_omega(m->cfg.n_layer * block_sublayers(&m->block.o));
    for (int l = 0; l < m->cfg.n_layer; l++) {
        for (int slot = BLOCK_ADMIN_OMEGA_1; slot <= BLOCK_ADMIN_OMEGA_2; slot++) {
            kiln_tensor *t = m->masters[l].w[slot];
            kiln_status s = t ? kiln_fill(t, omega) : KILN_OK;
            if (!s && t && m->blocks[l].w[slot] != t) s = kiln_copy(m->blocks[l].w[slot], t);
            if (s) return s;
        }
    }
    return KILN_OK;
}

kiln_status gpt_sigma_step(gpt_model *m) { return block_sigma_step(&m->block, m->masters, m->cfg.n_layer); }

void gpt_set_attn_temperature(gpt_model *m, float temperature) {
    m->cfg.block.attn_temperature = temperature;
    m->block.o.attn_temperature = temperature;
}

kiln_status gpt_attention_entropy(gpt_model *m, kiln_tensor *ids, double *per_layer, double *lowest) {
    int L = m->cfg.n_layer;
    if (!ids || gpt_check_token_ids(m, ids, 0)) return kiln_error_status();
    kiln_tensor **entropy = calloc((size_t)L, sizeof *entropy);
    float *heads = malloc((size_t)m->cfg.n_head * sizeof *heads);
    if (!entropy || !heads) {
        free(entropy);
        free(heads);
        return kiln_set_error(KILN_ERR_MEMORY, "attention entropy: out of host memory");
    }
    eval_mode e = eval_mode_enter(m->ctx);
    block_pass pass = {.entropy = entropy};
    kiln_status s = gpt_trunk(m, ids, NULL, NULL, &pass) ? KILN_OK : kiln_error_status();
    *lowest = NAN;
    for (int l = 0; l < L && !s; l++) {
        per_layer[l] = NAN;
        if (!entropy[l]) continue; /* no softmax attention in this layer */
        int64_t h = kiln_numel(entropy[l]);
        if ((s = kiln_download_f32(entropy[l], heads, h))) break;
        double sum = 0;
        for (int64_t i = 0; i < h; i++) {
            sum += heads[i];
            if (isnan(*lowest) || heads[i] < *lowest) *lowest = heads[i];
        }
        per_layer[l] = sum / (double)h;
    }
    eval_mode_leave(m->ctx, e);
    kiln_step_reset(m->ctx);
    free(entropy);
    free(heads);
    return s;
}

kiln_status gpt_layer_grad_norms(gpt_model *m, double unscale, double *out) {
    return model_params_layer_grad_norms(m->ctx, m->params, m->n_params, m->cfg.n_layer, unscale, out);
}
