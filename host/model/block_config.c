/* The block's options: their names, defaults, the combinations refused, and the constants
 * the papers derive from the depth (see block.h). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "model/block.h"

const char *const block_norm_names[BLOCK_NORM_COUNT] = {"pre", "post", "none"};
const char *const block_residual_names[BLOCK_RESIDUAL_COUNT] = {"plain", "rezero", "admin", "deepnorm"};
const char *const block_layer_names[BLOCK_LAYER_COUNT] = {"transformer", "gau"};
const char *const block_gau_attn_names[BLOCK_GAU_ATTN_COUNT] = {"relu2", "softmax"};
const char *const block_norm_type_names[BLOCK_NORM_TYPE_COUNT] = {"layernorm", "rmsnorm"};
const char *const block_mlp_names[BLOCK_MLP_COUNT] = {"gelu", "swiglu"};
const char *const block_bias_names[BLOCK_BIAS_COUNT] = {"all", "qkv", "none"};
const char *const block_rope_layout_names[2] = {"adjacent", "half"};

/* The rope's theta when a config leaves it at 0 (RoFormer's and LLaMA's). */
#define BLOCK_ROPE_BASE 10000.0f

int block_choice(const char *const *names, int count, const char *text) {
    for (int i = 0; text && i < count; i++)
        if (!strcmp(names[i], text)) return i;
    return -1;
}

block_options block_options_default(void) {
    return (block_options){.norm = BLOCK_NORM_PRE, .residual = BLOCK_RESIDUAL_PLAIN,
                           .layer = BLOCK_LAYER_TRANSFORMER, .attn_temperature = 1.0f,
                           .gau_s = 128, .gau_attn = BLOCK_GAU_RELU2, .rope_base = BLOCK_ROPE_BASE};
}

void block_options_fill_defaults(block_options *o) {
    block_options d = block_options_default();
    if (o->attn_temperature == 0.0f) o->attn_temperature = d.attn_temperature;
    if (o->gau_s == 0) o->gau_s = d.gau_s;
    if (o->rope_base == 0.0f) o->rope_base = d.rope_base;
}

/* Rotary positions turn q and k of a transformer layer's heads; a GAU layer has no heads of
 * q and k to turn, and RealFormer would add scores computed at other rotations. */
static int check_rope(const block_options *o, char *err, size_t errlen) {
    if (!o->rope) return 0;
    if (o->layer == BLOCK_LAYER_GAU) {
        snprintf(err, errlen, "position rope does not apply to layer-type gau (rotary positions turn the "
                 "heads of q and k of attention layers): use layer-type transformer or position learned");
        return -1;
    }
    if (o->residual_attention) {
        snprintf(err, errlen, "position rope does not combine with residual-attention (RealFormer would add "
                 "the previous layer's scores to this layer's rotated ones): drop one of them");
        return -1;
    }
    if (!(o->rope_base > 1.0f) || !isfinite(o->rope_base)) {
        snprintf(err, errlen, "rope base %g must be a number above 1", (double)o->rope_base);
        return -1;
    }
    return 0;
}

int block_options_check(const block_options *o, char *err, size_t errlen) {
    if ((unsigned)o->norm >= BLOCK_NORM_COUNT || (unsigned)o->residual >= BLOCK_RESIDUAL_COUNT ||
        (unsigned)o->layer >= BLOCK_LAYER_COUNT || (unsigned)o->gau_attn >= BLOCK_GAU_ATTN_COUNT ||
        (unsigned)o->norm_type >= BLOCK_NORM_TYPE_COUNT || (unsigned)o->mlp >= BLOCK_MLP_COUNT ||
        (unsigned)o->bias >= BLOCK_BIAS_COUNT || (unsigned)o->rope_layout > 1) {
        snprintf(err, errlen, "unknown block option value");
        return -1;
    }
    if ((o->residual == BLOCK_RESIDUAL_ADMIN || o->residual == BLOCK_RESIDUAL_DEEPNORM) &&
        o->norm != BLOCK_NORM_POST) {
        /* both rescale the skip path of x <- LN(s(x) + F(x)); with Pre-LN or no LN the skip
         * path is never normalized and the scaling only inflates the stream */
        snprintf(err, errlen, "residual %s needs norm post (it rescales the skip connection "
                 "that Post-LN normalizes), not norm %s", block_residual_names[o->residual],
                 block_norm_names[o->norm]);
        return -1;
    }
    if (o->residual_attention && o->layer == BLOCK_LAYER_GAU) {
        snprintf(err, errlen, "residual-attention needs every layer to have the same heads, and "
                 "a GAU layer has one head of width gau-s: use layer-type transformer");
        return -1;
    }
    if (!(o->attn_temperature > 0.0f) || !isfinite(o->attn_temperature)) {
        snprintf(err, errlen, "attention temperature %g must be a positive number", (double)o->attn_temperature);
        return -1;
    }
    if (o->gau_s < 1 || o->gau_s > 65536) {
        snprintf(err, errlen, "gau-s %d is out of range (1 to 65536)", o->gau_s);
        return -1;
    }
    return check_rope(o, err, errlen);
}

void block_deepnorm_constants(int n, int m, int is_decoder, float *alpha, float *beta) {
    if (m <= 0) { /* encoder-only or decoder-only: N layers */
        *alpha = (float)pow(2.0 * n, 0.25);
        *beta = (float)pow(8.0 * n, -0.25);
    } else if (!is_decoder) {
        double nm = pow((double)n, 4.0) * m;
        *alpha = (float)(0.81 * pow(nm, 1.0 / 16.0));
        *beta = (float)(0.87 * pow(nm, -1.0 / 16.0));
    } else {
        *alpha = (float)pow(3.0 * m, 0.25);
        *beta = (float)pow(12.0 * m, -0.25);
    }
}

float block_admin_closed_omega(int n) {
    double x = (double)(n + 1);
    return (float)sqrt(x / log(x) - 1.0);
}

int block_kv_heads(const block_config *c) { return c->n_kv_head ? c->n_kv_head : c->n_head; }

int block_head_dim(const block_config *c) { return c->head_dim ? c->head_dim : c->n_embd / c->n_head; }

int block_ffn(const block_config *c) {
    if (c->n_ffn) return c->n_ffn;
    if (c->o.mlp == BLOCK_MLP_GELU) return 4 * c->n_embd;
    int f = (8 * c->n_embd + 2) / 3; /* 8 C / 3 rounded up */
    return (f + 31) / 32 * 32;
}

int block_sublayers(const block_options *o) { return o->layer == BLOCK_LAYER_GAU ? 1 : 2; }

int block_config_sublayers(const block_config *c) { return block_sublayers(&c->o) + (c->cross_attention ? 1 : 0); }

block_slot block_linear_slot(block_linear l) {
    static const block_slot slots[BLOCK_LINEAR_COUNT] = {
        [BLOCK_LINEAR_QKV] = BLOCK_QKV_W, [BLOCK_LINEAR_ATTN_PROJ] = BLOCK_ATTN_PROJ_W,
        [BLOCK_LINEAR_FC] = BLOCK_FC_W, [BLOCK_LINEAR_MLP_PROJ] = BLOCK_MLP_PROJ_W,
        [BLOCK_LINEAR_GAU_UVZ] = BLOCK_GAU_UVZ_W, [BLOCK_LINEAR_GAU_O] = BLOCK_GAU_O_W,
        [BLOCK_LINEAR_CROSS_Q] = BLOCK_XQ_W, [BLOCK_LINEAR_CROSS_KV] = BLOCK_XKV_W,
        [BLOCK_LINEAR_CROSS_PROJ] = BLOCK_XPROJ_W,
    };
    return slots[l];
}
