/* The GPT's weights: config checks, allocation with checkpoint names, initialisation. */
#include "model/gpt.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int gpt_config_check(const gpt_config *c, char *err, size_t errlen) {
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
    if (c->n_embd % c->n_head != 0) {
        snprintf(err, errlen, "n_head = %d does not divide n_embd = %d", c->n_head, c->n_embd);
        return -1;
    }
    if (!(c->ln_eps > 0.0f) || !isfinite(c->ln_eps)) {
        snprintf(err, errlen, "layer_norm_epsilon = %g must be a positive number", (double)c->ln_eps);
        return -1;
    }
    return 0;
}

int gpt_param_specs(const gpt_config *cfg, gpt_param_spec *out) {
    int64_t C = cfg->n_embd;
    /* One block's weights: the name's suffix, ndim, the dims as multiples of C (c1 only
     * for matrices), decay, residual projection. */
    static const struct {
        const char *suffix;
        int ndim, c0, c1, decay, residual_proj;
    } block[] = {
        {.suffix = "ln_1.weight", .ndim = 1, .c0 = 1},
        {.suffix = "ln_1.bias", .ndim = 1, .c0 = 1},
        {.suffix = "attn.c_attn.weight", .ndim = 2, .c0 = 1, .c1 = 3, .decay = 1},
        {.suffix = "attn.c_attn.bias", .ndim = 1, .c0 = 3},
        {.suffix = "attn.c_proj.weight", .ndim = 2, .c0 = 1, .c1 = 1, .decay = 1, .residual_proj = 1},
        {.suffix = "attn.c_proj.bias", .ndim = 1, .c0 = 1},
        {.suffix = "ln_2.weight", .ndim = 1, .c0 = 1},
        {.suffix = "ln_2.bias", .ndim = 1, .c0 = 1},
        {.suffix = "mlp.c_fc.weight", .ndim = 2, .c0 = 1, .c1 = 4, .decay = 1},
        {.suffix = "mlp.c_fc.bias", .ndim = 1, .c0 = 4},
        {.suffix = "mlp.c_proj.weight", .ndim = 2, .c0 = 4, .c1 = 1, .decay = 1, .residual_proj = 1},
        {.suffix = "mlp.c_proj.bias", .ndim = 1, .c0 = 1},
    };
    enum { PER_BLOCK = sizeof block / sizeof block[0] };
    int n = 4 + PER_BLOCK * cfg->n_layer;
    if (!out) return n;
    gpt_param_spec *p = out;
    *p++ = (gpt_param_spec){.name = "wte.weight", .ndim = 2, .shape = {cfg->vocab_size, C}, .decay = 1};
    *p++ = (gpt_param_spec){.name = "wpe.weight", .ndim = 2, .shape = {cfg->n_positions, C}, .decay = 1};
    for (int l = 0; l < cfg->n_layer; l++) {
        for (int k = 0; k < PER_BLOCK; k++, p++) {
            snprintf(p->name, sizeof p->name, "h.%d.%s", l, block[k].suffix);
            p->ndim = block[k].ndim;
            p->shape[0] = block[k].c0 * C;
            p->shape[1] = block[k].ndim == 2 ? block[k].c1 * C : 1;
            p->decay = block[k].decay;
            p->residual_proj = block[k].residual_proj;
        }
    }
    *p++ = (gpt_param_spec){.name = "ln_f.weight", .ndim = 1, .shape = {C, 1}};
    *p++ = (gpt_param_spec){.name = "ln_f.bias", .ndim = 1, .shape = {C, 1}};
    return n;
}

/* The weight the forward pass reads for parameter i. */
static kiln_tensor *compute_weight(const gpt_model *m, int i) {
    return m->params[i].half ? m->params[i].half : m->params[i].t;
}

/* Points the named handles of the forward pass at the weights it reads, in
 * gpt_param_specs' order. */
static void bind_handles(gpt_model *m) {
    int n = m->n_params;
    m->wte = compute_weight(m, 0);
    m->wpe = compute_weight(m, 1);
    for (int l = 0; l < m->cfg.n_layer; l++) {
        int first = 2 + 12 * l;
        gpt_block *b = &m->blocks[l];
        kiln_tensor **slots[12] = {&b->ln_1_w, &b->ln_1_b, &b->attn_w, &b->attn_b,
                                   &b->attn_proj_w, &b->attn_proj_b, &b->ln_2_w, &b->ln_2_b,
                                   &b->fc_w, &b->fc_b, &b->mlp_proj_w, &b->mlp_proj_b};
        for (int k = 0; k < 12; k++) *slots[k] = compute_weight(m, first + k);
    }
    m->ln_f_w = compute_weight(m, n - 2);
    m->ln_f_b = compute_weight(m, n - 1);
}

gpt_model *gpt_new(kiln_ctx *ctx, const gpt_config *cfg) {
    gpt_model *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    m->ctx = ctx;
    m->cfg = *cfg;
    int n = gpt_param_specs(cfg, NULL);
    gpt_param_spec *specs = calloc((size_t)n, sizeof *specs);
    m->blocks = calloc((size_t)cfg->n_layer, sizeof *m->blocks);
    m->params = calloc((size_t)n, sizeof *m->params);
    if (!specs || !m->blocks || !m->params) goto fail;
    gpt_param_specs(cfg, specs);
    for (int i = 0; i < n; i++) {
        kiln_tensor *t = kiln_tensor_new(ctx, KILN_F32, specs[i].ndim, specs[i].shape);
        if (!t) goto fail;
        kiln_set_requires_grad(t, 1);
        m->params[i].spec = specs[i];
        m->params[i].t = t;
        m->n_params++;
    }
    m->dtype = KILN_F32;
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
    for (int i = 0; i < m->n_params; i++) {
        kiln_tensor_free(m->params[i].t);
        kiln_tensor_free(m->params[i].half);
    }
    free(m->params);
    free(m->blocks);
    free(m);
}

/* Init streams sit far above the ones dropout draws (the context counts those up from 0),
 * so an init never reuses a dropout mask's random numbers. */
#define GPT_INIT_STREAM_BASE ((uint64_t)1 << 40)

kiln_status gpt_init(gpt_model *m, uint64_t seed) {
    const float std = 0.02f;
    const float proj_std = std / sqrtf(2.0f * (float)m->cfg.n_layer);
    for (int i = 0; i < m->n_params; i++) {
        const gpt_param *p = &m->params[i];
        kiln_status s;
        if (p->spec.ndim == 2)
            s = kiln_init_normal(p->t, seed, GPT_INIT_STREAM_BASE + (uint64_t)i, 0.0f,
                                 p->spec.residual_proj ? proj_std : std);
        else if (strstr(p->spec.name, "ln_") && strstr(p->spec.name, ".weight"))
            s = kiln_fill(p->t, 1.0f);
        else
            s = kiln_fill(p->t, 0.0f);
        if (s) return s;
    }
    return KILN_OK;
}

/* An f16 tensor of t's shape holding t rounded to f16, or NULL (engine error set). */
static kiln_tensor *half_of(kiln_ctx *ctx, const kiln_tensor *t) {
    kiln_tensor *h = kiln_tensor_new(ctx, KILN_F16, t->ndim, t->shape);
    if (h && kiln_copy(h, t)) {
        kiln_tensor_free(h);
        return NULL;
    }
    return h;
}

kiln_status gpt_set_precision(gpt_model *m, kiln_dtype dtype, int keep_masters) {
    if (dtype == m->dtype) return KILN_OK;
    if (dtype != KILN_F16 || m->dtype != KILN_F32) {
        /* the host never goes back from f16; saying so beats a half-converted model */
        return kiln_set_error(KILN_ERR_ARGUMENT, "gpt_set_precision: unsupported change %s -> %s",
                              kiln_dtype_name(m->dtype), kiln_dtype_name(dtype));
    }
    /* every copy first, so a failure (no f16 storage, out of memory) leaves the model whole */
    kiln_tensor **halves = calloc((size_t)m->n_params, sizeof *halves);
    if (!halves) return KILN_ERR_MEMORY;
    for (int i = 0; i < m->n_params; i++) {
        if (!(halves[i] = half_of(m->ctx, m->params[i].t))) {
            kiln_status s = kiln_error_status();
            for (int k = 0; k < i; k++) kiln_tensor_free(halves[k]);
            free(halves);
            return s ? s : KILN_ERR_MEMORY;
        }
    }
    for (int i = 0; i < m->n_params; i++) {
        gpt_param *p = &m->params[i];
        if (keep_masters) {
            /* backward reaches the copies, never the masters: no f32 gradient is kept */
            kiln_set_requires_grad(p->t, 0);
            kiln_set_requires_grad(halves[i], 1);
            p->half = halves[i];
        } else {
            kiln_set_requires_grad(halves[i], kiln_requires_grad(p->t));
            kiln_tensor_free(p->t);
            p->t = halves[i];
        }
    }
    free(halves);
    m->dtype = KILN_F16;
    bind_handles(m);
    return KILN_OK;
}

kiln_tensor *gpt_grad_leaf(const gpt_model *m, int i) {
    return m->params[i].half ? m->params[i].half : m->params[i].t;
}

int64_t gpt_param_count(const gpt_model *m) {
    int64_t n = 0;
    for (int i = 0; i < m->n_params; i++) n += kiln_numel(m->params[i].t);
    return n;
}

gpt_param *gpt_find_param(gpt_model *m, const char *name) {
    for (int i = 0; i < m->n_params; i++)
        if (!strcmp(m->params[i].spec.name, name)) return &m->params[i];
    return NULL;
}
