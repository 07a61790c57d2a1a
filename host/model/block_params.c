/* The one place that names a block's tensors for checkpoints: which exist under which
 * options, their shapes and roles. A default block has exactly Hugging Face GPT-2's tensors,
 * in its order. */
#include <stdio.h>

#include "model/block.h"

/* Which options a tensor exists under. */
enum when {
    ALWAYS,
    WITH_NORM,         /* --norm pre or post */
    TRANSFORMER,       /* --layer-type transformer */
    TRANSFORMER_NORM,  /* both of the above */
    GAU,               /* --layer-type gau */
    REZERO,
    ADMIN,
    ADMIN_TRANSFORMER, /* Admin's second omega: the MLP sublayer */
    CROSS,             /* a decoder block's cross-attention */
    CROSS_NORM,        /* and its LayerNorm */
    ADMIN_CROSS,       /* and its omega */
    NORM_BIAS,         /* WITH_NORM's LayerNorm bias (RMSNorm has none) */
    TRANSFORMER_NORM_BIAS,
    CROSS_NORM_BIAS,
    QKV_BIAS,          /* a transformer layer with --bias all or qkv */
    LINEAR_BIAS,       /* a transformer layer with --bias all */
    QK_NORM,           /* a transformer layer with --qk-norm */
};

/* A tensor's shape as (c0, c1) multiples of the widths: C = n_embd, E = GAU's expansion
 * 2C, S = GAU's s; attention's QKV = (H + 2 KVH) hd and HD = H hd (3C and C for GPT-2), the
 * head width hd; the MLP's F and its first linear's FC (F, or 2F for SwiGLU). */
enum dim { D_NONE, D_ONE, D_C, D_2C, D_E, D_UVZ, D_S, D_TWO, D_QKV, D_HD, D_HEAD, D_F, D_FC };

typedef struct slot_desc {
    block_slot slot;
    const char *suffix;
    enum when when;
    enum dim d0, d1; /* d1 == D_NONE: 1-D */
    int decay;
} slot_desc;

static const slot_desc trained[] = {
    {.slot = BLOCK_LN1_W, .suffix = "ln_1.weight", .when = WITH_NORM, .d0 = D_C},
    {.slot = BLOCK_LN1_B, .suffix = "ln_1.bias", .when = NORM_BIAS, .d0 = D_C},
    {.slot = BLOCK_QKV_W, .suffix = "attn.c_attn.weight", .when = TRANSFORMER, .d0 = D_C, .d1 = D_QKV, .decay = 1},
    {.slot = BLOCK_QKV_B, .suffix = "attn.c_attn.bias", .when = QKV_BIAS, .d0 = D_QKV},
    {.slot = BLOCK_ATTN_PROJ_W, .suffix = "attn.c_proj.weight", .when = TRANSFORMER, .d0 = D_HD, .d1 = D_C, .decay = 1},
    {.slot = BLOCK_ATTN_PROJ_B, .suffix = "attn.c_proj.bias", .when = LINEAR_BIAS, .d0 = D_C},
    {.slot = BLOCK_Q_NORM_W, .suffix = "attn.q_norm.weight", .when = QK_NORM, .d0 = D_HEAD},
    {.slot = BLOCK_K_NORM_W, .suffix = "attn.k_norm.weight", .when = QK_NORM, .d0 = D_HEAD},
    {.slot = BLOCK_LNX_W, .suffix = "ln_cross.weight", .when = CROSS_NORM, .d0 = D_C},
    {.slot = BLOCK_LNX_B, .suffix = "ln_cross.bias", .when = CROSS_NORM_BIAS, .d0 = D_C},
    {.slot = BLOCK_XQ_W, .suffix = "cross.q.weight", .when = CROSS, .d0 = D_C, .d1 = D_C, .decay = 1},
    {.slot = BLOCK_XQ_B, .suffix = "cross.q.bias", .when = CROSS, .d0 = D_C},
    {.slot = BLOCK_XKV_W, .suffix = "cross.kv.weight", .when = CROSS, .d0 = D_C, .d1 = D_2C, .decay = 1},
    {.slot = BLOCK_XKV_B, .suffix = "cross.kv.bias", .when = CROSS, .d0 = D_2C},
    {.slot = BLOCK_XPROJ_W, .suffix = "cross.c_proj.weight", .when = CROSS, .d0 = D_C, .d1 = D_C, .decay = 1},
    {.slot = BLOCK_XPROJ_B, .suffix = "cross.c_proj.bias", .when = CROSS, .d0 = D_C},
    {.slot = BLOCK_LN2_W, .suffix = "ln_2.weight", .when = TRANSFORMER_NORM, .d0 = D_C},
    {.slot = BLOCK_LN2_B, .suffix = "ln_2.bias", .when = TRANSFORMER_NORM_BIAS, .d0 = D_C},
    {.slot = BLOCK_FC_W, .suffix = "mlp.c_fc.weight", .when = TRANSFORMER, .d0 = D_C, .d1 = D_FC, .decay = 1},
    {.slot = BLOCK_FC_B, .suffix = "mlp.c_fc.bias", .when = LINEAR_BIAS, .d0 = D_FC},
    {.slot = BLOCK_MLP_PROJ_W, .suffix = "mlp.c_proj.weight", .when = TRANSFORMER, .d0 = D_F, .d1 = D_C, .decay = 1},
    {.slot = BLOCK_MLP_PROJ_B, .suffix = "mlp.c_proj.bias", .when = LINEAR_BIAS, .d0 = D_C},
    {.slot = BLOCK_GAU_UVZ_W, .suffix = "gau.uvz.weight", .when = GAU, .d0 = D_C, .d1 = D_UVZ, .decay = 1},
    {.slot = BLOCK_GAU_UVZ_B, .suffix = "gau.uvz.bias", .when = GAU, .d0 = D_UVZ},
    {.slot = BLOCK_GAU_QK_SCALE, .suffix = "gau.qk.scale", .when = GAU, .d0 = D_TWO, .d1 = D_S},
    {.slot = BLOCK_GAU_QK_OFFSET, .suffix = "gau.qk.offset", .when = GAU, .d0 = D_TWO, .d1 = D_S},
    {.slot = BLOCK_GAU_O_W, .suffix = "gau.o.weight", .when = GAU, .d0 = D_E, .d1 = D_C, .decay = 1},
    {.slot = BLOCK_GAU_O_B, .suffix = "gau.o.bias", .when = GAU, .d0 = D_C},
    {.slot = BLOCK_REZERO_ALPHA, .suffix = "rezero.alpha", .when = REZERO, .d0 = D_ONE},
    {.slot = BLOCK_ADMIN_OMEGA_1, .suffix = "admin.omega_1", .when = ADMIN, .d0 = D_C},
    {.slot = BLOCK_ADMIN_OMEGA_2, .suffix = "admin.omega_2", .when = ADMIN_TRANSFORMER, .d0 = D_C},
    {.slot = BLOCK_ADMIN_OMEGA_X, .suffix = "admin.omega_cross", .when = ADMIN_CROSS, .d0 = D_C},
};

/* The linears' checkpoint stems, for sigma-reparam's "<stem>.sigma_gamma/u/v". */
static const char *const linear_stems[BLOCK_LINEAR_COUNT] = {
    [BLOCK_LINEAR_QKV] = "attn.c_attn", [BLOCK_LINEAR_ATTN_PROJ] = "attn.c_proj",
    [BLOCK_LINEAR_FC] = "mlp.c_fc", [BLOCK_LINEAR_MLP_PROJ] = "mlp.c_proj",
    [BLOCK_LINEAR_GAU_UVZ] = "gau.uvz", [BLOCK_LINEAR_GAU_O] = "gau.o",
    [BLOCK_LINEAR_CROSS_Q] = "cross.q", [BLOCK_LINEAR_CROSS_KV] = "cross.kv",
    [BLOCK_LINEAR_CROSS_PROJ] = "cross.c_proj",
};

static int present(const block_config *c, enum when w) {
    const block_options *o = &c->o;
    int gau = o->layer == BLOCK_LAYER_GAU, norm = o->norm != BLOCK_NORM_NONE, cross = c->cross_attention;
    int ln_bias = norm && o->norm_type == BLOCK_NORM_TYPE_LAYERNORM;
    switch (w) {
    case ALWAYS: return 1;
    case WITH_NORM: return norm;
    case TRANSFORMER: return !gau;
    case TRANSFORMER_NORM: return !gau && norm;
    case GAU: return gau;
    case REZERO: return o->residual == BLOCK_RESIDUAL_REZERO;
    case ADMIN: return o->residual == BLOCK_RESIDUAL_ADMIN;
    case ADMIN_TRANSFORMER: return o->residual == BLOCK_RESIDUAL_ADMIN && !gau;
    case CROSS: return cross;
    case CROSS_NORM: return cross && norm;
    case ADMIN_CROSS: return cross && o->residual == BLOCK_RESIDUAL_ADMIN;
    case NORM_BIAS: return ln_bias;
    case TRANSFORMER_NORM_BIAS: return !gau && ln_bias;
    case CROSS_NORM_BIAS: return cross && ln_bias;
    case QKV_BIAS: return !gau && o->bias != BLOCK_BIAS_NONE;
    case LINEAR_BIAS: return !gau && o->bias == BLOCK_BIAS_ALL;
    case QK_NORM: return !gau && o->qk_norm;
    }
    return 0;
}

static int64_t width(const block_config *c, enum dim d) {
    int64_t C = c->n_embd, E = 2 * C, S = c->o.gau_s, H = c->n_head, KVH = block_kv_heads(c),
            hd = block_head_dim(c), F = block_ffn(c);
    switch (d) {
    case D_NONE: return 1;
    case D_ONE: return 1;
    case D_C: return C;
    case D_2C: return 2 * C;
    case D_QKV: return (H + 2 * KVH) * hd;
    case D_HD: return H * hd;
    case D_HEAD: return hd;
    case D_F: return F;
    case D_FC: return c->o.mlp == BLOCK_MLP_SWIGLU ? 2 * F : F;
    case D_E: return E;
    case D_UVZ: return 2 * E + S;
    case D_S: return S;
    case D_TWO: return 2;
    }
    return 1;
}

static void put(param_spec *p, const char *prefix, int layer, const char *suffix, const char *extra,
                int ndim, int64_t d0, int64_t d1, int decay, int buffer, int slot) {
    snprintf(p->name, sizeof p->name, "%s%d.%s%s", prefix, layer, suffix, extra);
    p->ndim = ndim;
    p->shape[0] = d0;
    p->shape[1] = ndim == 2 ? d1 : 1;
    p->decay = decay;
    p->buffer = buffer;
    p->layer = layer;
    p->slot = slot;
}

int block_param_specs(const block_config *c, const char *prefix, int layer, int buffers,
                      param_spec *out) {
    int n = 0;
    const block_options *o = &c->o;
    if (!buffers) {
        for (size_t i = 0; i < sizeof trained / sizeof trained[0]; i++) {
            const slot_desc *d = &trained[i];
            if (!present(c, d->when)) continue;
            if (out)
                put(&out[n], prefix, layer, d->suffix, "", d->d1 == D_NONE ? 1 : 2, width(c, d->d0),
                    width(c, d->d1), d->decay, 0, (int)d->slot);
            n++;
        }
    }
    if (!o->sigma_reparam) return n;
    /* gamma is trained (no decay: it is a scale, like a LayerNorm weight); u and v are not */
    for (int l = 0; l < BLOCK_LINEAR_COUNT; l++) {
        block_slot ws = block_linear_slot((block_linear)l);
        int gau_linear = l == BLOCK_LINEAR_GAU_UVZ || l == BLOCK_LINEAR_GAU_O;
        int cross_linear = l >= BLOCK_LINEAR_CROSS_Q;
        if (cross_linear ? !c->cross_attention : gau_linear != (o->layer == BLOCK_LAYER_GAU)) continue;
        const slot_desc *d = NULL;
        for (size_t i = 0; i < sizeof trained / sizeof trained[0]; i++)
            if (trained[i].slot == ws) d = &trained[i];
        int64_t in = width(c, d->d0), outw = width(c, d->d1);
        if (!buffers) {
            if (out) put(&out[n], prefix, layer, linear_stems[l], ".sigma_gamma", 1, 1, 1, 0, 0, BLOCK_SIGMA_GAMMA + l);
            n++;
        } else {
            if (out) put(&out[n], prefix, layer, linear_stems[l], ".sigma_u", 1, in, 1, 0, 1, BLOCK_SIGMA_U + l);
            n++;
            if (out) put(&out[n], prefix, layer, linear_stems[l], ".sigma_v", 1, outw, 1, 0, 1, BLOCK_SIGMA_V + l);
            n++;
        }
    }
    return n;
}
