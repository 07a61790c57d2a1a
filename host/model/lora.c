/* LoRA adapters: targets, sites, the adapter's table, attaching and the forward hook
 * (model/lora.h). */
#include "model/lora.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/rng.h"
#include "model/gpt/gpt_export.h"
#include "model/gpt/gpt_gguf.h"

const char *const lora_target_modules[LORA_TARGET_COUNT] = {
    "attn.c_attn",      "attn.c_proj",      "mlp.c_fc",         "mlp.c_proj",    "self_attn.q_proj", "self_attn.k_proj",
    "self_attn.v_proj", "self_attn.o_proj", "mlp.gate_proj",    "mlp.up_proj",   "mlp.down_proj"};

/* One entry of a block's list of attached adapters (block_weights.lora). */
struct lora_block {
    lora_adapter *a;
    int layer;
    struct lora_block *next;
};

/* The streams an adapter's init draws from: past every stream a model's init takes (one per
 * tensor from MODEL_INIT_STREAM_BASE), so an adapter never reuses the base's numbers. */
#define LORA_INIT_STREAM_BASE (MODEL_INIT_STREAM_BASE + ((uint64_t)1 << 32))

int lora_family_of(const gpt_config *cfg, lora_family *out, char *err, size_t errlen) {
    char why[256];
    if (cfg->block.layer != BLOCK_LAYER_TRANSFORMER || cfg->block.sigma_reparam) {
        snprintf(err, errlen, "LoRA adapts GPT-2's and the Llama family's blocks; this model has %s",
                 cfg->block.sigma_reparam ? "sigma-reparam linears" : "GAU layers");
        return -1;
    }
    if (gpt_llama_arch(cfg, why, sizeof why)) {
        *out = LORA_FAMILY_LLAMA;
        return 0;
    }
    if (gpt_gguf_writes_gpt2(cfg)) {
        *out = LORA_FAMILY_GPT2;
        return 0;
    }
    snprintf(err, errlen, "LoRA adapts GPT-2's and the Llama family's blocks; this model is neither (%s)", why);
    return -1;
}

unsigned lora_family_targets(lora_family f) {
    if (f == LORA_FAMILY_GPT2) return (1u << LORA_Q_PROJ) - 1u;
    return ((1u << LORA_TARGET_COUNT) - 1u) & ~((1u << LORA_Q_PROJ) - 1u);
}

lora_site lora_site_of(const gpt_config *cfg, lora_target t) {
    block_config b = gpt_block_config(cfg);
    int64_t C = cfg->n_embd, q = (int64_t)b.n_head * block_head_dim(&b),
            kv = (int64_t)block_kv_heads(&b) * block_head_dim(&b), F = block_ffn(&b);
    switch (t) {
    case LORA_C_ATTN: return (lora_site){BLOCK_LINEAR_QKV, 0, q + 2 * kv, C};
    case LORA_Q_PROJ: return (lora_site){BLOCK_LINEAR_QKV, 0, q, C};
    case LORA_K_PROJ: return (lora_site){BLOCK_LINEAR_QKV, q, kv, C};
    case LORA_V_PROJ: return (lora_site){BLOCK_LINEAR_QKV, q + kv, kv, C};
    case LORA_ATTN_C_PROJ:
    case LORA_O_PROJ: return (lora_site){BLOCK_LINEAR_ATTN_PROJ, 0, C, q};
    case LORA_MLP_C_FC: return (lora_site){BLOCK_LINEAR_FC, 0, F, C};
    case LORA_GATE_PROJ: return (lora_site){BLOCK_LINEAR_FC, 0, F, C};
    case LORA_UP_PROJ: return (lora_site){BLOCK_LINEAR_FC, F, F, C};
    case LORA_MLP_C_PROJ:
    case LORA_DOWN_PROJ: return (lora_site){BLOCK_LINEAR_MLP_PROJ, 0, C, F};
    default: return (lora_site){BLOCK_LINEAR_QKV, 0, 0, 0};
    }
}

/* PEFT's match of one target_modules entry against a block-relative module name: equal, or
 * a suffix after a dot. */
static int suffix_matches(const char *module, const char *entry, size_t len) {
    size_t n = strlen(module);
    if (len == 0 || len > n || memcmp(module + n - len, entry, len)) return 0;
    return len == n || module[n - len - 1] == '.';
}

int lora_targets_parse(const gpt_config *cfg, const char *list, unsigned *mask, char *err, size_t errlen) {
    lora_family f;
    if (lora_family_of(cfg, &f, err, errlen)) return -1;
    unsigned family = lora_family_targets(f);
    *mask = 0;
    if (!list || !*list) {
        *mask = family;
        return 0;
    }
    for (const char *at = list; *at;) {
        const char *end = strchr(at, ',');
        size_t len = end ? (size_t)(end - at) : strlen(at), skip = 0;
        /* "q_proj, v_proj" as a person types it */
        while (skip < len && at[skip] == ' ') skip++;
        while (len > skip && at[len - 1] == ' ') len--;
        at += skip;
        len -= skip;
        unsigned found = 0;
        for (int t = 0; t < LORA_TARGET_COUNT; t++)
            if ((family >> t & 1u) && suffix_matches(lora_target_modules[t], at, len)) found |= 1u << t;
        if (!found) {
            snprintf(err, errlen, "--lora-targets: \"%.*s\" matches no module of this %s model's blocks (%s)",
                     (int)(len > 64 ? 64 : len), at, f == LORA_FAMILY_GPT2 ? "GPT-2" : "Llama-family",
                     f == LORA_FAMILY_GPT2 ? "attn.c_attn, attn.c_proj, mlp.c_fc, mlp.c_proj"
                                           : "self_attn.q_proj, k_proj, v_proj, o_proj, mlp.gate_proj, up_proj, down_proj");
            return -1;
        }
        *mask |= found;
        if (!end) break;
        at = end + 1;
    }
    return 0;
}

/* The table's specs: per layer, per target, A [r, in] then B [out, r]. */
static int adapter_specs(const lora_adapter *a, param_spec *out) {
    int n = 0;
    for (int l = 0; l < a->n_layer; l++)
        for (int t = 0; t < LORA_TARGET_COUNT; t++) {
            if (!(a->targets >> t & 1u)) continue;
            for (int b = 0; b < 2; b++, n++) {
                if (!out) continue;
                param_spec *s = &out[n];
                memset(s, 0, sizeof *s);
                snprintf(s->name, sizeof s->name, "h.%d.%s.lora_%c", l, lora_target_modules[t], b ? 'B' : 'A');
                s->ndim = 2;
                s->shape[0] = b ? a->site[t].cols : a->rank;
                s->shape[1] = b ? a->rank : a->site[t].in;
                s->decay = 1;
                s->layer = l;
                s->slot = 2 * t + b;
            }
        }
    return n;
}

/* A uniform(-1/sqrt(in), 1/sqrt(in)) from its own stream, B zeros. */
static kiln_status adapter_init(lora_adapter *a, uint64_t seed) {
    for (int i = 0; i < a->n_params; i++) {
        kiln_tensor *t = a->params[i].t;
        if (a->params[i].spec.slot % 2) {
            kiln_status s = kiln_fill(t, 0.0f);
            if (s) return s;
            continue;
        }
        int64_t n = kiln_numel(t);
        float bound = 1.0f / sqrtf((float)t->shape[1]);
        float *h = malloc((size_t)n * sizeof *h);
        if (!h) return KILN_ERR_MEMORY;
        for (int64_t k = 0; k < n; k++)
            h[k] = (2.0f * kiln_rng_uniform(seed, LORA_INIT_STREAM_BASE + (uint64_t)i, (uint64_t)k) - 1.0f) * bound;
        kiln_status s = kiln_upload_f32(t, h, n);
        free(h);
        if (s) return s;
    }
    return KILN_OK;
}

lora_adapter *lora_alloc(gpt_model *m, const lora_options *o, char *err, size_t errlen) {
    lora_family f;
    if (lora_family_of(&m->cfg, &f, err, errlen)) return NULL;
    unsigned targets = o->targets ? o->targets : lora_family_targets(f);
    if (targets & ~lora_family_targets(f)) {
        snprintf(err, errlen, "LoRA targets of another family than this model's");
        return NULL;
    }
    if (o->rank <= 0) {
        snprintf(err, errlen, "LoRA rank %d: the rank must be positive", o->rank);
        return NULL;
    }
    if (!(o->dropout >= 0.0f && o->dropout < 1.0f) || !isfinite(o->alpha) || o->alpha <= 0.0f) {
        snprintf(err, errlen, "LoRA alpha %g must be positive and dropout %g in [0, 1)", (double)o->alpha,
                 (double)o->dropout);
        return NULL;
    }
    lora_adapter *a = calloc(1, sizeof *a);
    if (!a) goto oom;
    *a = (lora_adapter){.family = f, .rank = o->rank, .alpha = o->alpha, .dropout = o->dropout,
                        .scale = o->alpha / (float)o->rank, .targets = targets, .n_layer = m->cfg.n_layer,
                        .ctx = m->ctx};
    for (int t = 0; t < LORA_TARGET_COUNT; t++) {
        if (!(targets >> t & 1u)) continue;
        a->site[t] = lora_site_of(&m->cfg, (lora_target)t);
        int64_t side = a->site[t].cols < a->site[t].in ? a->site[t].cols : a->site[t].in;
        if (o->rank > side) {
            snprintf(err, errlen, "LoRA rank %d exceeds the smaller side (%lld) of %s [%lld, %lld]", o->rank,
                     (long long)side, lora_target_modules[t], (long long)a->site[t].cols, (long long)a->site[t].in);
            free(a);
            return NULL;
        }
    }
    int n = adapter_specs(a, NULL), n_buffers;
    size_t layers = m->cfg.n_layer > 0 ? (size_t)m->cfg.n_layer : 1;
    param_spec *specs = malloc((size_t)(n > 0 ? n : 1) * sizeof *specs);
    a->first = malloc(layers * LORA_TARGET_COUNT * sizeof *a->first);
    a->links = calloc(layers, sizeof *a->links);
    if (!specs || !a->first || !a->links) {
        free(specs);
        lora_free(a);
        goto oom;
    }
    adapter_specs(a, specs);
    for (int i = 0; i < a->n_layer * LORA_TARGET_COUNT; i++) a->first[i] = -1;
    for (int i = 0; i < n; i += 2) a->first[specs[i].layer * LORA_TARGET_COUNT + specs[i].slot / 2] = i;
    a->params = model_params_new(m->ctx, specs, n, &a->n_params, &n_buffers);
    free(specs);
    if (!a->params) {
        snprintf(err, errlen, "cannot allocate the LoRA adapter: %s", kiln_error_message());
        lora_free(a);
        return NULL;
    }
    return a;
oom:
    snprintf(err, errlen, "out of host memory");
    return NULL;
}

lora_adapter *lora_new(gpt_model *m, const lora_options *o, uint64_t seed, char *err, size_t errlen) {
    lora_adapter *a = lora_alloc(m, o, err, errlen);
    if (a && adapter_init(a, seed)) {
        snprintf(err, errlen, "cannot initialize the LoRA adapter: %s", kiln_error_message());
        lora_free(a);
        return NULL;
    }
    return a;
}

/* Takes a's entries out of the lists of the model it is attached to. */
static void detach(lora_adapter *a) {
    gpt_model *m = a->attached;
    if (!m) return;
    for (int l = 0; l < a->n_layer && l < m->cfg.n_layer; l++)
        for (struct lora_block **p = &m->blocks[l].lora; *p; p = &(*p)->next)
            if (*p == &a->links[l]) {
                *p = a->links[l].next;
                break;
            }
    a->attached = NULL;
}

void lora_free(lora_adapter *a) {
    if (!a) return;
    detach(a);
    model_params_free(a->params, a->n_params);
    free(a->first);
    free(a->links);
    free(a);
}

int lora_attach(gpt_model *m, lora_adapter *a, char *err, size_t errlen) {
    if (a->attached) {
        snprintf(err, errlen, "this LoRA adapter is attached already");
        return -1;
    }
    for (int t = 0; t < LORA_TARGET_COUNT; t++) {
        lora_site s = lora_site_of(&m->cfg, (lora_target)t);
        if ((a->targets >> t & 1u) && (s.cols != a->site[t].cols || s.in != a->site[t].in || s.col0 != a->site[t].col0)) {
            snprintf(err, errlen, "the LoRA adapter's %s does not fit this model's shapes", lora_target_modules[t]);
            return -1;
        }
    }
    if (a->n_layer != m->cfg.n_layer) {
        snprintf(err, errlen, "the LoRA adapter has %d layers, the model %d", a->n_layer, m->cfg.n_layer);
        return -1;
    }
    for (int l = 0; l < a->n_layer; l++) {
        a->links[l] = (struct lora_block){.a = a, .layer = l, .next = NULL};
        struct lora_block **p = &m->blocks[l].lora;
        while (*p) p = &(*p)->next;
        *p = &a->links[l];
    }
    a->attached = m;
    return 0;
}

void lora_detach_all(gpt_model *m) {
    for (int l = 0; l < m->cfg.n_layer; l++) {
        for (struct lora_block *b = m->blocks[l].lora; b; b = b->next) b->a->attached = NULL;
        m->blocks[l].lora = NULL;
    }
}

void lora_freeze_base(gpt_model *m) {
    for (int i = 0; i < m->n_params + m->n_buffers; i++) {
        if (m->params[i].t) kiln_set_requires_grad(m->params[i].t, 0);
        if (m->params[i].half) kiln_set_requires_grad(m->params[i].half, 0);
    }
}

int64_t lora_param_count(const lora_adapter *a) { return model_params_count(a->params, a->n_params); }

/* The tensor of an adapter weight the forward reads, in the activations' dtype (an f32
 * adapter on an f16 model is cast on the way; fp16 training reads its f16 copy). */
static kiln_tensor *operand(const model_param *p, kiln_dtype dtype) {
    kiln_tensor *t = model_param_compute(p);
    return t && t->dtype != dtype ? kiln_cast(t, dtype) : t;
}

/* scale * (dropout(x) A^T) B^T of one adapter's target in one layer; the scale applies to
 * the r-wide middle, which keeps r values a token on the tape rather than the output's width. */
static kiln_tensor *delta(const lora_adapter *a, int layer, int t, kiln_tensor *x) {
    const model_param *p = &a->params[a->first[layer * LORA_TARGET_COUNT + t]];
    if (a->dropout > 0.0f && kiln_training(x->ctx)) x = kiln_dropout(x, a->dropout);
    kiln_tensor *h = kiln_scale(kiln_matmul(x, operand(&p[0], x->dtype), NULL, 0, 1), a->scale); /* [.., r] */
    return kiln_matmul(h, operand(&p[1], x->dtype), NULL, 0, 1);
}

kiln_tensor *lora_block_apply(const struct lora_block *lb, block_linear l, int64_t col0, kiln_tensor *x,
                              kiln_tensor *y) {
    if (!lb || !x || !y) return y;
    int64_t cols = y->shape[y->ndim - 1];
    for (const struct lora_block *b = lb; b && y; b = b->next)
        for (int t = 0; t < LORA_TARGET_COUNT && y; t++) {
            const lora_site *s = &b->a->site[t];
            if (!(b->a->targets >> t & 1u) || s->linear != l || s->col0 != col0 || s->cols != cols) continue;
            kiln_tensor *d = delta(b->a, b->layer, t, x);
            y = d ? kiln_add(y, d) : NULL;
        }
    return y;
}
