/* The GPT's weights: config checks, allocation with checkpoint names, initialisation. */
#include "model/gpt/gpt.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const gpt_position_names[GPT_POSITION_COUNT] = {"learned", "rope"};

/* The head and MLP sizes (GPT-2's when zero) and the rope's: one position scheme, an even
 * head width to rotate in pairs. */
static int check_llama_sizes(gpt_config *c, char *err, size_t errlen) {
    if (c->head_dim == 0 && c->n_embd % c->n_head != 0) {
        snprintf(err, errlen, "n_head = %d does not divide n_embd = %d", c->n_head, c->n_embd);
        return -1;
    }
    struct { const char *name; int value, max; } sizes[] = {
        {.name = "n_kv_head", .value = c->n_kv_head, .max = c->n_head},
        {.name = "head_dim", .value = c->head_dim, .max = 65536},
        {.name = "n_ffn", .value = c->n_ffn, .max = 1 << 20},
    };
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        if (sizes[i].value < 0 || sizes[i].value > sizes[i].max) {
            snprintf(err, errlen, "%s = %d is out of range (1 to %d, or 0 for GPT-2's)", sizes[i].name,
                     sizes[i].value, sizes[i].max);
            return -1;
        }
    }
    if (c->n_kv_head && c->n_head % c->n_kv_head) {
        snprintf(err, errlen, "n_kv_head = %d does not divide n_head = %d (each key/value head serves a "
                 "whole group of query heads)", c->n_kv_head, c->n_head);
        return -1;
    }
    if ((unsigned)c->position >= GPT_POSITION_COUNT) {
        snprintf(err, errlen, "unknown position scheme %d", (int)c->position);
        return -1;
    }
    if (c->block.rope) c->position = GPT_POSITION_ROPE;
    c->block.rope = c->position == GPT_POSITION_ROPE;
    int hd = c->head_dim ? c->head_dim : c->n_embd / c->n_head;
    if (c->block.rope && hd % 2) {
        snprintf(err, errlen, "position rope needs an even head width (rotated in pairs), not %d", hd);
        return -1;
    }
    if (c->rope_freqs && !c->block.rope) {
        snprintf(err, errlen, "rope_freqs (rope scaling) needs position rope");
        return -1;
    }
    return 0;
}

int gpt_config_check(gpt_config *c, char *err, size_t errlen) {
    block_options_fill_defaults(&c->block);
    /* The limits keep a lying config from asking for absurd memory before anything is
     * read; they are far above any model this program trains. */
    struct { const char *name; int value, max; } sizes[] = {
        {.name = "n_layer", .value = c->n_layer, .max = 1024},
        {.name = "n_head", .value = c->n_head, .max = 1024},
        {.name = "n_embd", .value = c->n_embd, .max = 65536},
        {.name = "n_positions", .value = c->n_positions, .max = 1 << 20},
        {.name = "vocab_size", .value = c->vocab_size, .max = 1 << 22},
    };
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        if (sizes[i].value < 1 || sizes[i].value > sizes[i].max) {
            snprintf(err, errlen, "%s = %d is out of range (1 to %d)", sizes[i].name,
                     sizes[i].value, sizes[i].max);
            return -1;
        }
    }
    if (check_llama_sizes(c, err, errlen)) return -1;
    if (!(c->ln_eps > 0.0f) || !isfinite(c->ln_eps)) {
        snprintf(err, errlen, "layer_norm_epsilon = %g must be a positive number", (double)c->ln_eps);
        return -1;
    }
    return block_options_check(&c->block, err, errlen);
}

block_config gpt_block_config(const gpt_config *cfg) {
    block_config b = {.n_embd = cfg->n_embd, .n_head = cfg->n_head, .n_kv_head = cfg->n_kv_head,
                      .head_dim = cfg->head_dim, .n_ffn = cfg->n_ffn, .ln_eps = cfg->ln_eps, .o = cfg->block, .deepnorm_alpha = 1.0f, .deepnorm_beta = 1.0f,
                      .proj_std = 0.02f / sqrtf(2.0f * (float)cfg->n_layer)};
    block_options_fill_defaults(&b.o);
    if (b.o.residual == BLOCK_RESIDUAL_DEEPNORM)
        block_deepnorm_constants(cfg->n_layer, 0, 0, &b.deepnorm_alpha, &b.deepnorm_beta);
    return b;
}

/* The model's own tensor i (wte, wpe, ln_f). */
static gpt_param_spec own(const char *name, int64_t d0, int64_t d1, int ndim, int decay, int slot) {
    gpt_param_spec p = {.ndim = ndim, .shape = {d0, d1}, .decay = decay, .layer = -1, .slot = slot};
    snprintf(p.name, sizeof p.name, "%s", name);
    return p;
}

/* Appends spec to out (when not NULL) at *n. */
static void add(gpt_param_spec *out, int *n, gpt_param_spec spec) {
    if (out) out[*n] = spec;
    (*n)++;
}

int gpt_param_specs(const gpt_config *cfg, gpt_param_spec *out) {
    block_config bc = gpt_block_config(cfg);
    int64_t C = cfg->n_embd;
    int n = 0, final_norm = bc.o.norm == BLOCK_NORM_PRE;
    add(out, &n, own("wte.weight", cfg->vocab_size, C, 2, 1, GPT_SLOT_WTE));
    if (!bc.o.rope) add(out, &n, own("wpe.weight", cfg->n_positions, C, 2, 1, GPT_SLOT_WPE));
    for (int l = 0; l < cfg->n_layer; l++) n += block_param_specs(&bc, "h.", l, 0, out ? out + n : NULL);
    if (final_norm) add(out, &n, own("ln_f.weight", C, 1, 1, 0, GPT_SLOT_LN_F_W));
    if (final_norm && bc.o.norm_type == BLOCK_NORM_TYPE_LAYERNORM)
        add(out, &n, own("ln_f.bias", C, 1, 1, 0, GPT_SLOT_LN_F_B));
    if (cfg->untied) add(out, &n, own("lm_head.weight", cfg->vocab_size, C, 2, 1, GPT_SLOT_LM_HEAD));
    for (int l = 0; l < cfg->n_layer; l++) n += block_param_specs(&bc, "h.", l, 1, out ? out + n : NULL);
    if (cfg->rope_freqs) {
        gpt_param_spec freqs = own("rope.freqs", block_head_dim(&bc) / 2, 1, 1, 0, GPT_SLOT_ROPE_FREQS);
        freqs.buffer = 1;
        add(out, &n, freqs);
    }
    return n;
}

/* Points the handles of the forward pass at the weights it reads, and the masters' at the
 * f32 weights. */
static void bind_handles(gpt_model *m) {
    m->ln_f_w = m->ln_f_b = m->wpe = m->lm_head = m->rope_freqs = NULL;
    for (int i = 0; i < m->n_params + m->n_buffers; i++) {
        const gpt_param_spec *s = &m->params[i].spec;
        kiln_tensor *t = model_param_compute(&m->params[i]);
        if (s->layer >= 0) {
            m->blocks[s->layer].w[s->slot] = t;
            m->masters[s->layer].w[s->slot] = m->params[i].t;
            continue;
        }
        kiln_tensor **own[] = {[GPT_SLOT_WTE] = &m->wte, [GPT_SLOT_WPE] = &m->wpe,
                               [GPT_SLOT_LN_F_W] = &m->ln_f_w, [GPT_SLOT_LN_F_B] = &m->ln_f_b,
                               [GPT_SLOT_LM_HEAD] = &m->lm_head, [GPT_SLOT_ROPE_FREQS] = &m->rope_freqs};
        *own[s->slot] = t;
    }
}

gpt_model *gpt_new(kiln_ctx *ctx, const gpt_config *cfg) { return gpt_new_except(ctx, cfg, NULL); }

gpt_model *gpt_new_except(kiln_ctx *ctx, const gpt_config *cfg, const unsigned char *absent) {
    return gpt_new_typed(ctx, cfg, absent, KILN_F32);
}

gpt_model *gpt_new_typed(kiln_ctx *ctx, const gpt_config *cfg, const unsigned char *absent, kiln_dtype dtype) {
    gpt_model *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    m->ctx = ctx;
    m->cfg = *cfg;
    block_options_fill_defaults(&m->cfg.block);
    m->block = gpt_block_config(&m->cfg);
    int n = gpt_param_specs(cfg, NULL);
    gpt_param_spec *specs = calloc((size_t)n, sizeof *specs);
    m->blocks = calloc((size_t)cfg->n_layer, sizeof *m->blocks);
    m->masters = calloc((size_t)cfg->n_layer, sizeof *m->masters);
    if (!specs || !m->blocks || !m->masters) goto fail;
    /* gpt_param_specs puts the buffers last */
    gpt_param_specs(cfg, specs);
    if (!(m->params = model_params_new_typed(ctx, specs, n, absent, dtype, &m->n_params, &m->n_buffers))) goto fail;
    m->dtype = dtype;
    bind_handles(m);
    free(specs);
    return m;
fail:
    free(specs);
    gpt_free(m);
    return NULL;
}

void gpt_free(gpt_model *m) {
    if (!m) return;
    if (m->quant) {
        for (int l = 0; m->blocks && l < m->cfg.n_layer; l++)
            for (int s = 0; s < BLOCK_SLOT_COUNT; s++) {
                kiln_qmatrix_free(m->blocks[l].q[s]);
                for (int k = 0; k < BLOCK_QPARTS; k++) kiln_qmatrix_free(m->blocks[l].qpart[s][k]);
            }
        kiln_qmatrix_free(m->quant->head);
        free(m->quant->embd);
        free(m->quant);
    }
    model_params_free(m->params, m->n_params + m->n_buffers);
    free(m->blocks);
    free(m->masters);
    free(m);
}

/* Streams for u and v per layer: two for each of the six linears a GPT block can have
 * (fixed, so that cross-attention's linears, which a GPT never has, change no GPT's init). */
#define GPT_SIGMA_STREAMS_PER_LAYER 12

static const block_config *gpt_block_of(const void *model, const param_spec *spec) {
    (void)spec;
    return &((const gpt_model *)model)->block;
}

/* The token and position tables and the untied head as GPT-2's tables (N(0, 0.02)); the
 * final norm 1 and 0. */
static kiln_status gpt_own_init(const void *model, const model_param *p, uint64_t seed, uint64_t stream) {
    (void)model;
    if (p->spec.slot == GPT_SLOT_WTE || p->spec.slot == GPT_SLOT_WPE || p->spec.slot == GPT_SLOT_LM_HEAD)
        return kiln_init_normal(p->t, seed, stream, 0.0f, 0.02f);
    return kiln_fill(p->t, p->spec.slot == GPT_SLOT_LN_F_W ? 1.0f : 0.0f);
}

kiln_status gpt_init(gpt_model *m, uint64_t seed) {
    static const model_init how = {.block_of = gpt_block_of, .own = gpt_own_init};
    kiln_status s = model_params_init(m->params, m->n_params, seed, &how, m);
    if (!s && m->rope_freqs) s = kiln_fill(m->rope_freqs, 1.0f); /* unscaled */
    if (s || !m->block.o.sigma_reparam) return s;
    return model_sigma_init(&m->block, m->masters, m->cfg.n_layer, 0, m->n_params + m->n_buffers,
                            GPT_SIGMA_STREAMS_PER_LAYER, seed);
}

kiln_status gpt_set_precision(gpt_model *m, kiln_dtype dtype, int keep_masters) {
    if (dtype == m->dtype) return KILN_OK;
    if (dtype != KILN_F16 || m->dtype != KILN_F32) {
        /* the host never goes back from f16; saying so beats a half-converted model */
        return kiln_set_error(KILN_ERR_ARGUMENT, "gpt_set_precision: unsupported change %s -> %s",
                              kiln_dtype_name(m->dtype), kiln_dtype_name(dtype));
    }
    kiln_status s = model_params_to_half(m->ctx, m->params, m->n_params, keep_masters);
    if (s) return s;
    m->dtype = KILN_F16;
    bind_handles(m);
    return KILN_OK;
}

kiln_tensor *gpt_grad_leaf(const gpt_model *m, int i) { return model_param_compute(&m->params[i]); }

int64_t gpt_param_count(const gpt_model *m) { return model_params_count(m->params, m->n_params); }

gpt_param *gpt_find_param(gpt_model *m, const char *name) {
    return model_params_find(m->params, m->n_params + m->n_buffers, name);
}
