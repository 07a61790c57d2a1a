/* The encoder-decoder's weights: config checks, checkpoint names, allocation, init and
 * precision (seq2seq.h). */
#include "model/seq2seq/seq2seq.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int seq2seq_config_check(seq2seq_config *c, char *err, size_t errlen) {
    block_options_fill_defaults(&c->block);
    struct { const char *name; int value, max; } sizes[] = {
        {.name = "enc_layers", .value = c->enc_layers, .max = 1024},
        {.name = "dec_layers", .value = c->dec_layers, .max = 1024},
        {.name = "n_head", .value = c->n_head, .max = 1024},
        {.name = "n_embd", .value = c->n_embd, .max = 65536},
        {.name = "max_len", .value = c->max_len, .max = 1 << 20},
        {.name = "src_vocab", .value = c->src_vocab, .max = 1 << 22},
        {.name = "tgt_vocab", .value = c->tgt_vocab, .max = 1 << 22},
    };
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        if (sizes[i].value < 1 || sizes[i].value > sizes[i].max) {
            snprintf(err, errlen, "%s = %d is out of range (1 to %d)", sizes[i].name, sizes[i].value, sizes[i].max);
            return -1;
        }
    }
    if (c->n_embd % c->n_head != 0) {
        snprintf(err, errlen, "n_head = %d does not divide n_embd = %d", c->n_head, c->n_embd);
        return -1;
    }
    if (c->shared_vocab && c->src_vocab != c->tgt_vocab) {
        snprintf(err, errlen, "a shared vocabulary needs src_vocab = tgt_vocab (%d and %d)", c->src_vocab, c->tgt_vocab);
        return -1;
    }
    if (!(c->ln_eps > 0.0f) || !isfinite(c->ln_eps)) {
        snprintf(err, errlen, "layer_norm_epsilon = %g must be a positive number", (double)c->ln_eps);
        return -1;
    }
    if (c->block.layer == BLOCK_LAYER_GAU && c->block.gau_attn == BLOCK_GAU_RELU2) {
        snprintf(err, errlen, "the encoder's GAU layers need gau-attn softmax (relu2's averaging table is causal)");
        return -1;
    }
    return block_options_check(&c->block, err, errlen);
}

/* One stack's block config: DeepNorm's encoder-decoder constants, Xavier init as the
 * paper's implementations, ReLU. */
static block_config stack_config(const seq2seq_config *cfg, int decoder) {
    block_config b = {.n_embd = cfg->n_embd, .n_head = cfg->n_head, .ln_eps = cfg->ln_eps, .o = cfg->block,
                      .deepnorm_alpha = 1.0f, .deepnorm_beta = 1.0f, .bidirectional = !decoder,
                      .cross_attention = decoder, .mlp_act = KILN_ACT_RELU, .xavier_init = 1};
    block_options_fill_defaults(&b.o);
    int layers = decoder ? cfg->dec_layers : cfg->enc_layers;
    b.proj_std = 0.02f / sqrtf((float)(layers * block_config_sublayers(&b)));
    if (b.o.residual == BLOCK_RESIDUAL_DEEPNORM)
        block_deepnorm_constants(cfg->enc_layers, cfg->dec_layers, decoder, &b.deepnorm_alpha, &b.deepnorm_beta);
    return b;
}

static param_spec own(const char *name, int64_t d0, int64_t d1, int ndim, int decay, int slot) {
    param_spec p = {.ndim = ndim, .shape = {d0, d1}, .decay = decay, .layer = -1, .slot = slot};
    snprintf(p.name, sizeof p.name, "%s", name);
    return p;
}

int seq2seq_param_is_decoder(const param_spec *spec) { return !strncmp(spec->name, "decoder.", 8); }

int seq2seq_param_specs(const seq2seq_config *cfg, param_spec *out) {
    block_config enc = stack_config(cfg, 0), dec = stack_config(cfg, 1);
    int64_t C = cfg->n_embd;
    int n = 0, final_norm = enc.o.norm == BLOCK_NORM_PRE;
#define PUT(spec)                      \
    do {                               \
        if (out) out[n] = (spec);      \
        n++;                           \
    } while (0)
    if (cfg->shared_vocab) {
        PUT(own("embed.weight", cfg->src_vocab, C, 2, 1, S2S_SLOT_EMBED));
    } else {
        PUT(own("src_embed.weight", cfg->src_vocab, C, 2, 1, S2S_SLOT_SRC_EMBED));
        PUT(own("tgt_embed.weight", cfg->tgt_vocab, C, 2, 1, S2S_SLOT_TGT_EMBED));
    }
    for (int l = 0; l < cfg->enc_layers; l++) n += block_param_specs(&enc, "encoder.h.", l, 0, out ? out + n : NULL);
    if (final_norm) {
        PUT(own("encoder.ln_f.weight", C, 1, 1, 0, S2S_SLOT_ENC_LN_W));
        PUT(own("encoder.ln_f.bias", C, 1, 1, 0, S2S_SLOT_ENC_LN_B));
    }
    for (int l = 0; l < cfg->dec_layers; l++) n += block_param_specs(&dec, "decoder.h.", l, 0, out ? out + n : NULL);
    if (final_norm) {
        PUT(own("decoder.ln_f.weight", C, 1, 1, 0, S2S_SLOT_DEC_LN_W));
        PUT(own("decoder.ln_f.bias", C, 1, 1, 0, S2S_SLOT_DEC_LN_B));
    }
#undef PUT
    for (int l = 0; l < cfg->enc_layers; l++) n += block_param_specs(&enc, "encoder.h.", l, 1, out ? out + n : NULL);
    for (int l = 0; l < cfg->dec_layers; l++) n += block_param_specs(&dec, "decoder.h.", l, 1, out ? out + n : NULL);
    return n;
}

/* Points the forward pass's handles at the weights it reads (the f16 copies in mixed
 * precision) and the masters' at the f32 weights. */
static void bind_handles(seq2seq_model *m) {
    m->enc_ln_w = m->enc_ln_b = m->dec_ln_w = m->dec_ln_b = NULL;
    for (int i = 0; i < m->n_params + m->n_buffers; i++) {
        const param_spec *s = &m->params[i].spec;
        kiln_tensor *t = model_param_compute(&m->params[i]);
        if (s->layer >= 0) {
            int dec = seq2seq_param_is_decoder(s);
            (dec ? m->dec : m->enc)[s->layer].w[s->slot] = t;
            (dec ? m->dec_masters : m->enc_masters)[s->layer].w[s->slot] = m->params[i].t;
            continue;
        }
        switch (s->slot) {
        case S2S_SLOT_EMBED: m->src_embed = m->tgt_embed = t; break;
        case S2S_SLOT_SRC_EMBED: m->src_embed = t; break;
        case S2S_SLOT_TGT_EMBED: m->tgt_embed = t; break;
        case S2S_SLOT_ENC_LN_W: m->enc_ln_w = t; break;
        case S2S_SLOT_ENC_LN_B: m->enc_ln_b = t; break;
        case S2S_SLOT_DEC_LN_W: m->dec_ln_w = t; break;
        case S2S_SLOT_DEC_LN_B: m->dec_ln_b = t; break;
        default: break;
        }
    }
}

/* The sinusoidal table as a persistent tensor of the model's dtype. */
static kiln_tensor *position_table(kiln_ctx *ctx, kiln_dtype dtype, int64_t positions, int64_t channels) {
    kiln_tensor *pe = kiln_tensor_2d(ctx, dtype, positions, channels);
    kiln_tensor *table = pe ? kiln_sinusoid_table(ctx, positions, channels) : NULL;
    kiln_status s = table ? kiln_copy(pe, table) : KILN_ERR_ARGUMENT;
    kiln_step_reset(ctx);
    if (s) {
        kiln_tensor_free(pe);
        return NULL;
    }
    return pe;
}

seq2seq_model *seq2seq_new(kiln_ctx *ctx, const seq2seq_config *cfg) {
    seq2seq_model *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    m->ctx = ctx;
    m->cfg = *cfg;
    block_options_fill_defaults(&m->cfg.block);
    m->enc_block = stack_config(&m->cfg, 0);
    m->dec_block = stack_config(&m->cfg, 1);
    m->dtype = KILN_F32;
    int n = seq2seq_param_specs(&m->cfg, NULL);
    param_spec *specs = calloc((size_t)n, sizeof *specs);
    m->enc = calloc((size_t)cfg->enc_layers, sizeof *m->enc);
    m->dec = calloc((size_t)cfg->dec_layers, sizeof *m->dec);
    m->enc_masters = calloc((size_t)cfg->enc_layers, sizeof *m->enc_masters);
    m->dec_masters = calloc((size_t)cfg->dec_layers, sizeof *m->dec_masters);
    if (!specs || !m->enc || !m->dec || !m->enc_masters || !m->dec_masters) goto fail;
    seq2seq_param_specs(&m->cfg, specs);
    if (!(m->params = model_params_new(ctx, specs, n, &m->n_params, &m->n_buffers))) goto fail;
    if (!(m->pe = position_table(ctx, KILN_F32, cfg->max_len, cfg->n_embd))) goto fail;
    bind_handles(m);
    free(specs);
    return m;
fail:
    free(specs);
    seq2seq_free(m);
    return NULL;
}

void seq2seq_free(seq2seq_model *m) {
    if (!m) return;
    model_params_free(m->params, m->n_params + m->n_buffers);
    kiln_tensor_free(m->pe);
    free(m->enc);
    free(m->dec);
    free(m->enc_masters);
    free(m->dec_masters);
    free(m);
}

static const block_config *s2s_block_of(const void *model, const param_spec *spec) {
    const seq2seq_model *m = model;
    return seq2seq_param_is_decoder(spec) ? &m->dec_block : &m->enc_block;
}

/* The embeddings N(0, 1/sqrt(d)) (the forward scales them by sqrt(d) on the way in);
 * the final LayerNorms 1 and 0. */
static kiln_status s2s_own_init(const void *model, const model_param *p, uint64_t seed, uint64_t stream) {
    const seq2seq_model *m = model;
    if (p->spec.slot <= S2S_SLOT_TGT_EMBED)
        return kiln_init_normal(p->t, seed, stream, 0.0f, 1.0f / sqrtf((float)m->cfg.n_embd));
    return kiln_fill(p->t, p->spec.slot == S2S_SLOT_ENC_LN_W || p->spec.slot == S2S_SLOT_DEC_LN_W ? 1.0f : 0.0f);
}

kiln_status seq2seq_init(seq2seq_model *m, uint64_t seed) {
    static const model_init how = {.block_of = s2s_block_of, .own = s2s_own_init};
    kiln_status s = model_params_init(m->params, m->n_params, seed, &how, m);
    if (s || !m->cfg.block.sigma_reparam) return s;
    /* the decoder's layers count on from the encoder's */
    int tensors = m->n_params + m->n_buffers;
    s = model_sigma_init(&m->enc_block, m->enc_masters, m->cfg.enc_layers, 0, tensors, 2 * BLOCK_LINEAR_COUNT, seed);
    if (s) return s;
    return model_sigma_init(&m->dec_block, m->dec_masters, m->cfg.dec_layers, m->cfg.enc_layers, tensors,
                            2 * BLOCK_LINEAR_COUNT, seed);
}

kiln_status seq2seq_set_precision(seq2seq_model *m, kiln_dtype dtype, int keep_masters) {
    if (dtype == m->dtype) return KILN_OK;
    if (dtype != KILN_F16 || m->dtype != KILN_F32)
        return kiln_set_error(KILN_ERR_ARGUMENT, "seq2seq_set_precision: unsupported change %s -> %s",
                              kiln_dtype_name(m->dtype), kiln_dtype_name(dtype));
    kiln_tensor *pe = position_table(m->ctx, KILN_F16, m->cfg.max_len, m->cfg.n_embd);
    if (!pe) return kiln_error_status();
    kiln_status s = model_params_to_half(m->ctx, m->params, m->n_params, keep_masters);
    if (s) {
        kiln_tensor_free(pe);
        return s;
    }
    kiln_tensor_free(m->pe);
    m->pe = pe;
    m->dtype = KILN_F16;
    bind_handles(m);
    return KILN_OK;
}

kiln_status seq2seq_sigma_step(seq2seq_model *m) {
    kiln_status s = block_sigma_step(&m->enc_block, m->enc_masters, m->cfg.enc_layers);
    return s ? s : block_sigma_step(&m->dec_block, m->dec_masters, m->cfg.dec_layers);
}

/* The trained tensors are in checkpoint order (seq2seq_param_specs): every encoder block's
 * before the first decoder tensor, every decoder block's after it; each part's layers are
 * its stack's. */
kiln_status seq2seq_layer_grad_norms(seq2seq_model *m, double unscale, double *out) {
    int first_dec = 0;
    while (first_dec < m->n_params && !seq2seq_param_is_decoder(&m->params[first_dec].spec)) first_dec++;
    kiln_status s = model_params_layer_grad_norms(m->ctx, m->params, first_dec, m->cfg.enc_layers, unscale, out);
    return s ? s
             : model_params_layer_grad_norms(m->ctx, m->params + first_dec, m->n_params - first_dec,
                                             m->cfg.dec_layers, unscale, out + m->cfg.enc_layers);
}

int64_t seq2seq_param_count(const seq2seq_model *m) { return model_params_count(m->params, m->n_params); }

kiln_status seq2seq_admin_closed_form(seq2seq_model *m) {
    float enc = block_admin_closed_omega(m->cfg.enc_layers * block_config_sublayers(&m->enc_block));
    float dec = block_admin_closed_omega(m->cfg.dec_layers * block_config_sublayers(&m->dec_block));
    static const block_slot omegas[] = {BLOCK_ADMIN_OMEGA_1, BLOCK_ADMIN_OMEGA_2, BLOCK_ADMIN_OMEGA_X};
    for (int i = 0; i < m->n_params; i++) {
        const param_spec *s = &m->params[i].spec;
        for (size_t k = 0; k < sizeof omegas / sizeof omegas[0]; k++) {
            if (s->layer < 0 || s->slot != (int)omegas[k]) continue;
            kiln_status st = kiln_fill(m->params[i].t, seq2seq_param_is_decoder(s) ? dec : enc);
            if (st) return st;
        }
    }
    return KILN_OK;
}
