/* The GPT's hooks for the stability options: Admin's omega init, sigma-reparam's power
 * iteration, the attention temperature, and the probes monitoring reads (per-layer
 * attention entropy and gradient norms). The formulas live in the block (model/block.h). */
#include <math.h>
#include <stdlib.h>

#include "model/gpt/gpt.h"
#include "model/gpt/gpt_internal.h"
#include "model/model_monitor.h"

kiln_status gpt_admin_profile(gpt_model *m, kiln_tensor *ids, float *omegas) {
    if (m->block.o.residual != BLOCK_RESIDUAL_ADMIN)
        return kiln_set_error(KILN_ERR_ARGUMENT, "admin profiling: the model's residual is not admin");
    if (m->dtype != KILN_F32)
        return kiln_set_error(KILN_ERR_ARGUMENT, "admin profiling: run it on the f32 model, before mixed precision");
    if (!ids || gpt_check_token_ids(m, ids, 0)) return kiln_error_status();
    model_eval_mode e = model_eval_mode_enter(m->ctx);
    block_admin_profile profile = {.ratio = 1.0f, .omegas = omegas};
    block_pass pass = {.admin = &profile};
    kiln_tensor *x = gpt_trunk(m, ids, NULL, NULL, &pass);
    kiln_status s = x ? KILN_OK : kiln_error_status();
    model_eval_mode_leave(m->ctx, e);
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

typedef struct entropy_pass {
    gpt_model *m;
    kiln_tensor *ids;
} entropy_pass;

static kiln_status entropy_forward(void *self, kiln_tensor **entropy) {
    entropy_pass *p = self;
    block_pass pass = {.entropy = entropy};
    return gpt_trunk(p->m, p->ids, NULL, NULL, &pass) ? KILN_OK : kiln_error_status();
}

kiln_status gpt_attention_entropy(gpt_model *m, kiln_tensor *ids, double *per_layer, double *lowest) {
    if (!ids || gpt_check_token_ids(m, ids, 0)) return kiln_error_status();
    entropy_pass p = {.m = m, .ids = ids};
    return model_entropy_probe(m->ctx, m->cfg.n_layer, entropy_forward, &p, per_layer, lowest);
}

kiln_status gpt_layer_grad_norms(gpt_model *m, double unscale, double *out) {
    return model_params_layer_grad_norms(m->ctx, m->params, m->n_params, m->cfg.n_layer, unscale, out);
}
