/* BERT's weights: config checks, parameter table, allocation, init and precision (bert.h). */
#include "model/bert/bert.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int bert_config_check(bert_config *c, char *err, size_t errlen) {
    block_options_fill_defaults(&c->block);
    struct { const char *name; int value, min, max; } sizes[] = {
        {.name = "n_layer", .value = c->n_layer, .min = 1, .max = 1024},
        {.name = "n_head", .value = c->n_head, .min = 1, .max = 1024},
        {.name = "n_embd", .value = c->n_embd, .min = 1, .max = 65536},
        {.name = "max_len", .value = c->max_len, .min = 3, .max = 1 << 20},
        {.name = "vocab_size", .value = c->vocab_size, .min = 1, .max = 1 << 22},
    };
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        if (sizes[i].value < sizes[i].min || sizes[i].value > sizes[i].max) {
            snprintf(err, errlen, "%s = %d is out of range (%d to %d)", sizes[i].name, sizes[i].value, sizes[i].min,
                     sizes[i].max);
            return -1;
        }
    }
    if (c->n_embd % c->n_head != 0) {
        snprintf(err, errlen, "n_head = %d does not divide n_embd = %d", c->n_head, c->n_embd);
        return -1;
    }
    if (!(c->ln_eps > 0.0f) || !isfinite(c->ln_eps)) {
        snprintf(err, errlen, "layer_norm_eps = %g must be a positive number", (double)c->ln_eps);
        return -1;
    }
    if (c->block.layer == BLOCK_LAYER_GAU && c->block.gau_attn == BLOCK_GAU_RELU2) {
        snprintf(err, errlen, "BERT's GAU layers need gau-attn softmax (relu2's averaging table is causal)");
        return -1;
    }
    return block_options_check(&c->block, err, errlen);
}

block_config bert_block_config(const bert_config *cfg) {
    /* Hugging Face initializes every linear N(0, initializer_range = 0.02), the residual
     * projections included: proj_std 0.02, not GPT-2's 0.02 / sqrt(2 L) */
    block_config b = {.n_embd = cfg->n_embd, .n_head = cfg->n_head, .ln_eps = cfg->ln_eps, .o = cfg->block,
                      .bidirectional = 1, .mlp_act = KILN_ACT_GELU, .deepnorm_alpha = 1.0f, .deepnorm_beta = 1.0f,
                      .proj_std = 0.02f};
    block_options_fill_defaults(&b.o);
    if (b.o.residual == BLOCK_RESIDUAL_DEEPNORM)
        block_deepnorm_constants(cfg->n_layer, 0, 0, &b.deepnorm_alpha, &b.deepnorm_beta);
    return b;
}

static param_spec own(const char *name, int64_t d0, int64_t d1, int ndim, int slot) {
    param_spec p = {.ndim = ndim, .shape = {d0, d1}, .decay = ndim == 2, .layer = -1, .slot = slot};
    snprintf(p.name, sizeof p.name, "%s", name);
    return p;
}

int bert_param_specs(const bert_config *cfg, param_spec *out) {
    block_config b = bert_block_config(cfg);
    int64_t C = cfg->n_embd, V = cfg->vocab_size;
    int n = 0;
#define PUT(spec)                      \
    do {                               \
        if (out) out[n] = (spec);      \
        n++;                           \
    } while (0)
    PUT(own("bert.embeddings.word_embeddings.weight", V, C, 2, BERT_SLOT_WORD));
    PUT(own("bert.embeddings.position_embeddings.weight", cfg->max_len, C, 2, BERT_SLOT_POS));
    PUT(own("bert.embeddings.token_type_embeddings.weight", BERT_TYPE_VOCAB, C, 2, BERT_SLOT_TYPE));
    PUT(own("bert.embeddings.LayerNorm.weight", C, 1, 1, BERT_SLOT_EMB_LN_W));
    PUT(own("bert.embeddings.LayerNorm.bias", C, 1, 1, BERT_SLOT_EMB_LN_B));
    for (int l = 0; l < cfg->n_layer; l++) n += block_param_specs(&b, BERT_BLOCK_PREFIX, l, 0, out ? out + n : NULL);
    if (b.o.norm == BLOCK_NORM_PRE) {
        PUT(own("bert.encoder.kiln.ln_f.weight", C, 1, 1, BERT_SLOT_LN_F_W));
        PUT(own("bert.encoder.kiln.ln_f.bias", C, 1, 1, BERT_SLOT_LN_F_B));
    }
    PUT(own("cls.predictions.transform.dense.weight", C, C, 2, BERT_SLOT_HEAD_W));
    PUT(own("cls.predictions.transform.dense.bias", C, 1, 1, BERT_SLOT_HEAD_B));
    PUT(own("cls.predictions.transform.LayerNorm.weight", C, 1, 1, BERT_SLOT_HEAD_LN_W));
    PUT(own("cls.predictions.transform.LayerNorm.bias", C, 1, 1, BERT_SLOT_HEAD_LN_B));
    PUT(own("cls.predictions.bias", V, 1, 1, BERT_SLOT_OUT_BIAS));
#undef PUT
    for (int l = 0; l < cfg->n_layer; l++) n += block_param_specs(&b, BERT_BLOCK_PREFIX, l, 1, out ? out + n : NULL);
    return n;
}

/* Points the forward pass's handles at the weights it reads (the f16 copies in mixed
 * precision) and the masters' at the f32 weights. */
static void bind_handles(bert_model *m) {
    kiln_tensor **own[] = {
        [BERT_SLOT_WORD] = &m->word,         [BERT_SLOT_POS] = &m->pos,         [BERT_SLOT_TYPE] = &m->type,
        [BERT_SLOT_EMB_LN_W] = &m->emb_ln_w, [BERT_SLOT_EMB_LN_B] = &m->emb_ln_b, [BERT_SLOT_LN_F_W] = &m->ln_f_w,
        [BERT_SLOT_LN_F_B] = &m->ln_f_b,     [BERT_SLOT_HEAD_W] = &m->head_w,   [BERT_SLOT_HEAD_B] = &m->head_b,
        [BERT_SLOT_HEAD_LN_W] = &m->head_ln_w, [BERT_SLOT_HEAD_LN_B] = &m->head_ln_b,
        [BERT_SLOT_OUT_BIAS] = &m->out_bias,
    };
    for (size_t i = 0; i < sizeof own / sizeof own[0]; i++) *own[i] = NULL;
    for (int i = 0; i < m->n_params + m->n_buffers; i++) {
        const param_spec *s = &m->params[i].spec;
        kiln_tensor *t = model_param_compute(&m->params[i]);
        if (s->layer >= 0) {
            m->blocks[s->layer].w[s->slot] = t;
            m->masters[s->layer].w[s->slot] = m->params[i].t;
        } else if (s->slot >= 0 && (size_t)s->slot < sizeof own / sizeof own[0]) {
            *own[s->slot] = t;
        }
    }
}

bert_model *bert_new(kiln_ctx *ctx, const bert_config *cfg) {
    bert_model *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    m->ctx = ctx;
    m->cfg = *cfg;
    block_options_fill_defaults(&m->cfg.block);
    m->block = bert_block_config(&m->cfg);
    m->dtype = KILN_F32;
    int n = bert_param_specs(&m->cfg, NULL);
    param_spec *specs = calloc((size_t)n, sizeof *specs);
    m->blocks = calloc((size_t)cfg->n_layer, sizeof *m->blocks);
    m->masters = calloc((size_t)cfg->n_layer, sizeof *m->masters);
    if (!specs || !m->blocks || !m->masters) goto fail;
    bert_param_specs(&m->cfg, specs);
    if (!(m->params = model_params_new(ctx, specs, n, &m->n_params, &m->n_buffers))) goto fail;
    bind_handles(m);
    free(specs);
    return m;
fail:
    free(specs);
    bert_free(m);
    return NULL;
}

void bert_free(bert_model *m) {
    if (!m) return;
    model_params_free(m->params, m->n_params + m->n_buffers);
    free(m->blocks);
    free(m->masters);
    free(m);
}

#define BERT_INIT_STD 0.02f

static const block_config *bert_block_of(const void *model, const param_spec *spec) {
    (void)spec;
    return &((const bert_model *)model)->block;
}

/* Matrices N(0, 0.02), as Hugging Face's; the LayerNorms' gains 1, every bias 0. */
static kiln_status bert_own_init(const void *model, const model_param *p, uint64_t seed, uint64_t stream) {
    (void)model;
    if (p->spec.ndim == 2) return kiln_init_normal(p->t, seed, stream, 0.0f, BERT_INIT_STD);
    int gain = p->spec.slot == BERT_SLOT_EMB_LN_W || p->spec.slot == BERT_SLOT_LN_F_W ||
               p->spec.slot == BERT_SLOT_HEAD_LN_W;
    return kiln_fill(p->t, gain ? 1.0f : 0.0f);
}

kiln_status bert_init(bert_model *m, uint64_t seed) {
    static const model_init how = {.block_of = bert_block_of, .own = bert_own_init};
    kiln_status s = model_params_init(m->params, m->n_params, seed, &how, m);
    if (s || !m->cfg.block.sigma_reparam) return s;
    return model_sigma_init(&m->block, m->masters, m->cfg.n_layer, 0, m->n_params + m->n_buffers,
                            2 * BLOCK_LINEAR_COUNT, seed);
}

kiln_status bert_set_precision(bert_model *m, kiln_dtype dtype, int keep_masters) {
    if (dtype == m->dtype) return KILN_OK;
    if (dtype != KILN_F16 || m->dtype != KILN_F32)
        return kiln_set_error(KILN_ERR_ARGUMENT, "bert_set_precision: unsupported change %s -> %s",
                              kiln_dtype_name(m->dtype), kiln_dtype_name(dtype));
    kiln_status s = model_params_to_half(m->ctx, m->params, m->n_params, keep_masters);
    if (s) return s;
    m->dtype = KILN_F16;
    bind_handles(m);
    return KILN_OK;
}

kiln_status bert_sigma_step(bert_model *m) { return block_sigma_step(&m->block, m->masters, m->cfg.n_layer); }

int64_t bert_param_count(const bert_model *m) { return model_params_count(m->params, m->n_params); }

void bert_set_attn_temperature(bert_model *m, float temperature) {
    m->cfg.block.attn_temperature = temperature;
    m->block.o.attn_temperature = temperature;
}

kiln_status bert_admin_closed_form(bert_model *m) {
    float omega = block_admin_closed_omega(m->cfg.n_layer * block_config_sublayers(&m->block));
    for (int i = 0; i < m->n_params; i++) {
        const param_spec *s = &m->params[i].spec;
        if (s->layer < 0 || (s->slot != BLOCK_ADMIN_OMEGA_1 && s->slot != BLOCK_ADMIN_OMEGA_2)) continue;
        kiln_status st = kiln_fill(m->params[i].t, omega);
        if (st) return st;
    }
    return KILN_OK;
}

void bert_batch_free(bert_batch *b) {
    free(b->ids);
    free(b->lengths);
    free(b->targets);
    b->ids = b->lengths = b->targets = NULL;
}
