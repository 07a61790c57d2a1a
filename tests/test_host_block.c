/* The shared transformer block, its stability options and the Llama family's
 * (host/model/block.h), on every backend:
 *   - one table of block configurations: on cpu each one's backward (the input's gradient
 *     and the option's own learned tensors) against finite differences, elsewhere forward
 *     and gradients against the CPU, and every case again in f16;
 *   - the formulas by hand: DeepNorm's constants and init, ReZero's identity at init, the
 *     temperature as scaled queries, RealFormer's score accumulation, sigma against the top
 *     singular value, GAU's small output at init, Admin's profiling recurrence;
 *   - whole GPTs with each option (the Llama family's too): a checkpoint round trip gives the
 *     same logits and config, the KV cache gives the full pass's, entropy falls with the
 *     temperature; the Llama family's keys are written only where a model is not GPT-2;
 *   - Llama 3's rope scaling against transformers' numbers;
 *   - the combinations refused. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model/block.h"
#include "model/gpt/gpt.h"
#include "model/gpt/gpt_checkpoint.h"
#include "model/model_checkpoint.h"
#include "testutil.h"

/* ---- the table ---- */

/* What the block is part of: a GPT's causal stack, an encoder (bidirectional, the second
 * row padded), a decoder (causal, cross-attention to a memory input whose second row is
 * padded). */
enum block_role { ROLE_GPT, ROLE_ENCODER, ROLE_DECODER };

typedef struct block_case {
    block_options o;
    enum block_role role;
    int layers;          /* blocks stacked (RealFormer passes scores between them) */
    int n_slots;
    block_slot slots[5]; /* the case's inputs after x, in order: these tensors are checked */
    /* the Llama family's sizes (0: GPT-2's, H heads of C / H); rope_freqs: the rope's
       frequency factors (Llama 3's scaling) are 1, 2.5, 8, ... rather than none */
    int heads, kv_heads, head_dim, ffn, rope_freqs;
    int fused; /* block_config.attention_fused: attention through kiln_attention */
} block_case;

enum { C = 8, H = 2, S = 4 };

static block_config config_of(const block_options *o, int layers) {
    block_config c = {.n_embd = C, .n_head = H, .ln_eps = 1e-5f, .o = *o, .deepnorm_alpha = 1.0f,
                      .deepnorm_beta = 1.0f, .proj_std = 0.02f};
    if (!c.o.attn_temperature) c.o.attn_temperature = 1.0f;
    if (!c.o.gau_s) c.o.gau_s = S;
    if (!c.o.rope_base) c.o.rope_base = 10000.0f;
    if (o->residual == BLOCK_RESIDUAL_DEEPNORM) block_deepnorm_constants(layers, 0, 0, &c.deepnorm_alpha, &c.deepnorm_beta);
    return c;
}

/* A case's config: its options and the Llama family's sizes. */
static block_config case_config(const block_case *bc, int layers) {
    block_config c = config_of(&bc->o, layers);
    if (bc->heads) c.n_head = bc->heads;
    c.n_kv_head = bc->kv_heads;
    c.head_dim = bc->head_dim;
    c.n_ffn = bc->ffn;
    return c;
}

/* A value for element i of a tensor in `slot`: large enough weights that every part of the
 * block matters to the output (GPT-2's 0.02 would hide the attention). */
static float test_value(block_slot slot, uint64_t stream, int64_t i) {
    float r = kiln_rng_normal(99, stream, (uint64_t)i);
    switch (slot) {
    case BLOCK_LN1_W: case BLOCK_LN2_W: case BLOCK_LNX_W: case BLOCK_Q_NORM_W: case BLOCK_K_NORM_W:
        return 1.0f + 0.1f * r;
    case BLOCK_REZERO_ALPHA: return 0.7f;
    case BLOCK_ADMIN_OMEGA_1: case BLOCK_ADMIN_OMEGA_2: case BLOCK_ADMIN_OMEGA_X: return 1.2f + 0.1f * r;
    case BLOCK_GAU_QK_SCALE: return 1.0f + 0.3f * r;
    default: break;
    }
    if (slot >= BLOCK_SIGMA_GAMMA && slot < BLOCK_SIGMA_U) return 1.5f;
    if (slot >= BLOCK_SIGMA_U) return 0.0f; /* u, v: converged on W by make_weights */
    return 0.35f * r;
}

/* sigma-reparam's u and v as a trained model has them: converged on W's top singular pair
 * (power iteration on the host, in double), so u^T W v is W's spectral norm and not the
 * near-zero a random pair gives. */
static void converge_sigma_pair(const float *W, int64_t in, int64_t out, float *u, float *v) {
    double *du = calloc((size_t)in, sizeof *du), *dv = malloc((size_t)out * sizeof *dv);
    for (int64_t j = 0; j < out; j++) dv[j] = 1.0 + 0.1 * (double)j;
    for (int it = 0; it < 100; it++) {
        double norm = 0;
        for (int64_t i = 0; i < in; i++) {
            du[i] = 0;
            for (int64_t j = 0; j < out; j++) du[i] += W[i * out + j] * dv[j];
            norm += du[i] * du[i];
        }
        for (int64_t i = 0; i < in; i++) du[i] /= sqrt(norm);
        norm = 0;
        for (int64_t j = 0; j < out; j++) {
            dv[j] = 0;
            for (int64_t i = 0; i < in; i++) dv[j] += W[i * out + j] * du[i];
            norm += dv[j] * dv[j];
        }
        for (int64_t j = 0; j < out; j++) dv[j] /= sqrt(norm);
    }
    for (int64_t i = 0; i < in; i++) u[i] = (float)du[i];
    for (int64_t j = 0; j < out; j++) v[j] = (float)dv[j];
    free(du);
    free(dv);
}

/* A block's weights as step tensors (rebuilt identically by every build). */
static int make_weights(const block_config *c, int layer, kiln_ctx *ctx, kiln_dtype dtype, block_weights *w) {
    param_spec specs[64];
    float *host[64];
    int n = block_param_specs(c, "h.", layer, 0, specs);
    n += block_param_specs(c, "h.", layer, 1, specs + n);
    memset(w, 0, sizeof *w);
    int by_slot[BLOCK_SLOT_COUNT];
    for (int i = 0; i < n; i++) {
        int64_t count = specs[i].shape[0] * specs[i].shape[1];
        host[i] = malloc((size_t)count * sizeof *host[i]);
        for (int64_t k = 0; k < count; k++) host[i][k] = test_value((block_slot)specs[i].slot, (uint64_t)(layer * 64 + i), k);
        by_slot[specs[i].slot] = i;
    }
    for (int i = 0; i < n; i++) {
        int l = specs[i].slot - BLOCK_SIGMA_U;
        if (l < 0 || l >= BLOCK_LINEAR_COUNT) continue;
        const param_spec *ws = &specs[by_slot[block_linear_slot((block_linear)l)]];
        converge_sigma_pair(host[by_slot[ws->slot]], ws->shape[0], ws->shape[1], host[i],
                            host[by_slot[BLOCK_SIGMA_V + l]]);
    }
    int rc = 0;
    for (int i = 0; i < n; i++) {
        /* buffers stay f32 in an f16 model, as gpt_set_precision keeps them */
        kiln_tensor *t = kiln_tensor_temp(ctx, specs[i].buffer ? KILN_F32 : dtype, specs[i].ndim, specs[i].shape);
        if (!t || kiln_upload_f32(t, host[i], kiln_numel(t))) rc = -1;
        w->w[specs[i].slot] = t;
        free(host[i]);
    }
    return rc;
}

/* Lengths [2]: the first row whole, the second padded after `short_len`. */
static kiln_tensor *row_lengths(kiln_ctx *ctx, int32_t full, int32_t short_len) {
    int64_t two = 2;
    int32_t len[2] = {full, short_len};
    kiln_tensor *t = kiln_tensor_temp(ctx, KILN_I32, 1, &two);
    return t && !kiln_upload(t, len, sizeof len) ? t : NULL;
}

/* Frequency factors [n]: 1, 2.5, 4, ... (f32, as a model's rope.freqs buffer). */
static kiln_tensor *freq_factors(kiln_ctx *ctx, int64_t n) {
    float f[16];
    for (int64_t i = 0; i < n && i < 16; i++) f[i] = 1.0f + 1.5f * (float)i;
    kiln_tensor *t = kiln_tensor_temp(ctx, KILN_F32, 1, &n);
    return t && !kiln_upload_f32(t, f, n) ? t : NULL;
}

static kiln_tensor *build_block(kiln_tensor **in, const void *param) {
    const block_case *bc = param;
    int layers = bc->layers ? bc->layers : 1;
    block_config c = case_config(bc, layers);
    c.attention_fused = bc->fused;
    kiln_tensor *x = in[0];
    block_pass pass = {.pos0 = 0};
    if (bc->rope_freqs) pass.rope_freqs = freq_factors(x->ctx, block_head_dim(&c) / 2);
    int first_slot = 1;
    if (bc->role == ROLE_ENCODER) {
        c.bidirectional = 1;
        pass.key_lengths = row_lengths(x->ctx, (int32_t)x->shape[1], 3);
    } else if (bc->role == ROLE_DECODER) {
        c.cross_attention = 1;
        pass.memory = in[1];
        pass.memory_lengths = row_lengths(x->ctx, (int32_t)in[1]->shape[1], 2);
        first_slot = 2;
    }
    for (int l = 0; l < layers && x; l++) {
        block_weights w;
        if (make_weights(&c, l, in[0]->ctx, in[0]->dtype, &w)) return NULL;
        for (int i = 0; i < bc->n_slots; i++) w.w[bc->slots[i]] = in[first_slot + i];
        x = block_forward(&c, &w, l, x, &pass, NULL, NULL);
    }
    return x;
}

#define X_IN {.dtype = KILN_F32, .ndim = 3, .shape = {2, 5, C}, .grad = 1}
#define MEMORY_IN {.dtype = KILN_F32, .ndim = 3, .shape = {2, 4, C}, .grad = 1}
#define VEC_IN(n, mean) {.dtype = KILN_F32, .ndim = 1, .shape = {n}, .init = KILN_INIT_NORMAL, .lo = mean, .hi = 0.1f, .grad = 1}
#define QK_IN(mean) {.dtype = KILN_F32, .ndim = 2, .shape = {2, S}, .init = KILN_INIT_NORMAL, .lo = mean, .hi = 0.3f, .grad = 1}

static const block_case PRE = {.o = {.norm = BLOCK_NORM_PRE}};
static const block_case POST = {.o = {.norm = BLOCK_NORM_POST}};
static const block_case REZERO_NONE = {.o = {.norm = BLOCK_NORM_NONE, .residual = BLOCK_RESIDUAL_REZERO},
                                       .n_slots = 1, .slots = {BLOCK_REZERO_ALPHA}};
static const block_case REZERO_PRE = {.o = {.norm = BLOCK_NORM_PRE, .residual = BLOCK_RESIDUAL_REZERO},
                                      .n_slots = 1, .slots = {BLOCK_REZERO_ALPHA}};
static const block_case ADMIN = {.o = {.norm = BLOCK_NORM_POST, .residual = BLOCK_RESIDUAL_ADMIN},
                                 .n_slots = 2, .slots = {BLOCK_ADMIN_OMEGA_1, BLOCK_ADMIN_OMEGA_2}};
static const block_case DEEPNORM = {.o = {.norm = BLOCK_NORM_POST, .residual = BLOCK_RESIDUAL_DEEPNORM}, .layers = 2};
static const block_case SIGMA = {.o = {.norm = BLOCK_NORM_NONE, .sigma_reparam = 1},
                                 .n_slots = 4,
                                 .slots = {BLOCK_SIGMA_GAMMA + BLOCK_LINEAR_QKV, BLOCK_SIGMA_GAMMA + BLOCK_LINEAR_ATTN_PROJ,
                                           BLOCK_SIGMA_GAMMA + BLOCK_LINEAR_FC, BLOCK_SIGMA_GAMMA + BLOCK_LINEAR_MLP_PROJ}};
static const block_case REALFORMER = {.o = {.norm = BLOCK_NORM_POST, .residual_attention = 1}, .layers = 3};
static const block_case COLD = {.o = {.norm = BLOCK_NORM_PRE, .attn_temperature = 0.25f}};
static const block_case GAU_PRE = {.o = {.norm = BLOCK_NORM_PRE, .layer = BLOCK_LAYER_GAU},
                                   .n_slots = 2, .slots = {BLOCK_GAU_QK_SCALE, BLOCK_GAU_QK_OFFSET}};
static const block_case GAU_POST_SOFTMAX = {.o = {.norm = BLOCK_NORM_POST, .layer = BLOCK_LAYER_GAU,
                                                  .gau_attn = BLOCK_GAU_SOFTMAX},
                                            .n_slots = 1, .slots = {BLOCK_GAU_QK_SCALE}};
static const block_case GAU_SIGMA = {.o = {.norm = BLOCK_NORM_PRE, .layer = BLOCK_LAYER_GAU, .sigma_reparam = 1},
                                     .n_slots = 2,
                                     .slots = {BLOCK_SIGMA_GAMMA + BLOCK_LINEAR_GAU_UVZ, BLOCK_SIGMA_GAMMA + BLOCK_LINEAR_GAU_O}};
static const block_case GAU_ADMIN = {.o = {.norm = BLOCK_NORM_POST, .residual = BLOCK_RESIDUAL_ADMIN,
                                           .layer = BLOCK_LAYER_GAU},
                                     .n_slots = 1, .slots = {BLOCK_ADMIN_OMEGA_1}};

static const block_case ENCODER = {.o = {.norm = BLOCK_NORM_POST}, .role = ROLE_ENCODER, .layers = 2};
static const block_case ENCODER_GAU = {.o = {.norm = BLOCK_NORM_PRE, .layer = BLOCK_LAYER_GAU, .gau_attn = BLOCK_GAU_SOFTMAX},
                                       .role = ROLE_ENCODER};
static const block_case DECODER = {.o = {.norm = BLOCK_NORM_POST}, .role = ROLE_DECODER, .layers = 2};
static const block_case DECODER_PRE = {.o = {.norm = BLOCK_NORM_PRE}, .role = ROLE_DECODER,
                                       .n_slots = 2, .slots = {BLOCK_LNX_W, BLOCK_LNX_B}};
static const block_case DECODER_ADMIN = {.o = {.norm = BLOCK_NORM_POST, .residual = BLOCK_RESIDUAL_ADMIN},
                                         .role = ROLE_DECODER, .n_slots = 3,
                                         .slots = {BLOCK_ADMIN_OMEGA_1, BLOCK_ADMIN_OMEGA_X, BLOCK_ADMIN_OMEGA_2}};
static const block_case DECODER_SIGMA = {.o = {.norm = BLOCK_NORM_NONE, .sigma_reparam = 1}, .role = ROLE_DECODER,
                                         .n_slots = 3,
                                         .slots = {BLOCK_SIGMA_GAMMA + BLOCK_LINEAR_CROSS_Q,
                                                   BLOCK_SIGMA_GAMMA + BLOCK_LINEAR_CROSS_KV,
                                                   BLOCK_SIGMA_GAMMA + BLOCK_LINEAR_CROSS_PROJ}};
static const block_case DECODER_GAU = {.o = {.norm = BLOCK_NORM_PRE, .layer = BLOCK_LAYER_GAU}, .role = ROLE_DECODER};

/* the Llama family's options: RMSNorm, rope, SwiGLU, grouped-query attention (4 query heads
 * over 2 or 1 key/value heads), bias modes, Qwen3's q/k norm, a head width not C / H */
#define LLAMA_O(...) {.norm_type = BLOCK_NORM_TYPE_RMSNORM, .mlp = BLOCK_MLP_SWIGLU, .rope = 1, __VA_ARGS__}
static const block_case LLAMA_GQA = {.o = LLAMA_O(.bias = BLOCK_BIAS_NONE, .rope_layout = KILN_ROPE_HALF), .heads = 4, .kv_heads = 2, .layers = 2,
                                     .n_slots = 2, .slots = {BLOCK_LN1_W, BLOCK_LN2_W}};
static const block_case QWEN2_MQA = {.o = LLAMA_O(.bias = BLOCK_BIAS_QKV, .rope_base = 1e6f, .rope_layout = KILN_ROPE_HALF), .heads = 4,
                                     .kv_heads = 1, .n_slots = 1, .slots = {BLOCK_QKV_B}};
static const block_case QWEN3_QK_NORM = {.o = LLAMA_O(.bias = BLOCK_BIAS_NONE, .qk_norm = 1, .rope_layout = KILN_ROPE_HALF), .heads = 4, .kv_heads = 2, .head_dim = 6,
                                         .n_slots = 2, .slots = {BLOCK_Q_NORM_W, BLOCK_K_NORM_W}};
static const block_case LLAMA3_FREQS = {.o = LLAMA_O(.bias = BLOCK_BIAS_NONE, .rope_layout = KILN_ROPE_ADJACENT), .heads = 2, .kv_heads = 1,
                                        .rope_freqs = 1};
/* SwiGLU's c_fc [C, 2F] as an input that requires grad: its training path (the gate's and
 * up's column blocks as two products) */
static const block_case RMS_POST_REZERO = {.o = LLAMA_O(.bias = BLOCK_BIAS_NONE, .norm = BLOCK_NORM_POST,
                                                          .residual = BLOCK_RESIDUAL_REZERO),
                                           .heads = 4, .kv_heads = 2, .ffn = 6, .n_slots = 3,
                                           .slots = {BLOCK_REZERO_ALPHA, BLOCK_LN1_W, BLOCK_FC_W}};
static const block_case RMS_SIGMA = {.o = LLAMA_O(.bias = BLOCK_BIAS_NONE, .sigma_reparam = 1), .heads = 4, .kv_heads = 2, .ffn = 12,
                                     .n_slots = 2,
                                     .slots = {BLOCK_SIGMA_GAMMA + BLOCK_LINEAR_QKV, BLOCK_SIGMA_GAMMA + BLOCK_LINEAR_FC}};
static const block_case GQA_GELU_LEARNED = {.o = {.norm = BLOCK_NORM_PRE, .bias = BLOCK_BIAS_ALL}, .heads = 4,
                                            .kv_heads = 2, .ffn = 12, .n_slots = 1, .slots = {BLOCK_QKV_B}};

/* A case through fused attention, and the same case unfused (its reference): param is a
 * pointer to the block_case. */
static kiln_tensor *build_block_fused(kiln_tensor **in, const void *param) {
    block_case f = **(const block_case *const *)param;
    f.fused = 1;
    return build_block(in, &f);
}
static kiln_tensor *build_block_unfused(kiln_tensor **in, const void *param) {
    return build_block(in, *(const block_case *const *)param);
}
static const block_case *const FUSED_LLAMA_GQA = &LLAMA_GQA, *const FUSED_QWEN2_MQA = &QWEN2_MQA,
                        *const FUSED_ENCODER = &ENCODER, *const FUSED_DECODER = &DECODER, *const FUSED_COLD = &COLD,
                        *const FUSED_REALFORMER = &REALFORMER;
#define FUSED_CASE(case_name, which, ...)                                                                     \
    {.name = case_name, .build = build_block_fused, .reference = build_block_unfused, .param = &which,       \
     __VA_ARGS__, .fwd_tol = 1e-9}

static const kiln_verify_case cases[] = {
    {.name = "block_pre", .build = build_block, .param = &PRE, .n_in = 1, .in = {X_IN}, .fwd_tol = 1e-9},
    {.name = "block_post", .build = build_block, .param = &POST, .n_in = 1, .in = {X_IN}, .fwd_tol = 1e-9},
    {.name = "block_rezero_none", .build = build_block, .param = &REZERO_NONE, .n_in = 2,
     .in = {X_IN, VEC_IN(1, 0.7f)}, .fwd_tol = 1e-9},
    {.name = "block_rezero_pre", .build = build_block, .param = &REZERO_PRE, .n_in = 2,
     .in = {X_IN, VEC_IN(1, 0.7f)}, .fwd_tol = 1e-9},
    {.name = "block_admin", .build = build_block, .param = &ADMIN, .n_in = 3,
     .in = {X_IN, VEC_IN(C, 1.2f), VEC_IN(C, 1.5f)}, .fwd_tol = 1e-9},
    {.name = "block_deepnorm", .build = build_block, .param = &DEEPNORM, .n_in = 1, .in = {X_IN}, .fwd_tol = 1e-9},
    /* gamma's gradient is a sum over every weight of its linear (<dW_hat, W> / sigma), each
     * term rounded in f16: looser than one element's gradient */
    {.name = "block_sigma_reparam", .build = build_block, .param = &SIGMA, .n_in = 5,
     .in = {X_IN, VEC_IN(1, 1.5f), VEC_IN(1, 1.2f), VEC_IN(1, 1.4f), VEC_IN(1, 1.3f)}, .fwd_tol = 1e-9,
     .f16_tol = 2e-4},
    /* three layers of accumulated scores, and a temperature of 1/4, sharpen the softmax: its
     * gradient amplifies f16's input rounding a few times over a single block's */
    {.name = "block_realformer", .build = build_block, .param = &REALFORMER, .n_in = 1, .in = {X_IN}, .fwd_tol = 1e-9,
     .f16_tol = 1e-4},
    {.name = "block_temperature", .build = build_block, .param = &COLD, .n_in = 1, .in = {X_IN}, .fwd_tol = 1e-9,
     .f16_tol = 1e-4},
    {.name = "block_gau_pre", .build = build_block, .param = &GAU_PRE, .n_in = 3,
     .in = {X_IN, QK_IN(1.0f), QK_IN(0.0f)}, .fwd_tol = 1e-9},
    {.name = "block_gau_post_softmax", .build = build_block, .param = &GAU_POST_SOFTMAX, .n_in = 2,
     .in = {X_IN, QK_IN(1.0f)}, .fwd_tol = 1e-9},
    /* gamma in f16 as above */
    {.name = "block_gau_sigma", .build = build_block, .param = &GAU_SIGMA, .n_in = 3,
     .in = {X_IN, VEC_IN(1, 1.5f), VEC_IN(1, 1.2f)}, .fwd_tol = 1e-9, .f16_tol = 2e-4},
    {.name = "block_gau_admin", .build = build_block, .param = &GAU_ADMIN, .n_in = 2,
     .in = {X_IN, VEC_IN(C, 1.2f)}, .fwd_tol = 1e-9},
    /* encoder and decoder blocks: padding masks, and cross-attention's gradient reaching the
     * encoder's output */
    {.name = "block_encoder", .build = build_block, .param = &ENCODER, .n_in = 1, .in = {X_IN}, .fwd_tol = 1e-9},
    {.name = "block_encoder_gau", .build = build_block, .param = &ENCODER_GAU, .n_in = 1, .in = {X_IN}, .fwd_tol = 1e-9},
    {.name = "block_decoder", .build = build_block, .param = &DECODER, .n_in = 2, .in = {X_IN, MEMORY_IN},
     .fwd_tol = 1e-9},
    {.name = "block_decoder_pre", .build = build_block, .param = &DECODER_PRE, .n_in = 4,
     .in = {X_IN, MEMORY_IN, VEC_IN(C, 1.0f), VEC_IN(C, 0.0f)}, .fwd_tol = 1e-9},
    {.name = "block_decoder_admin", .build = build_block, .param = &DECODER_ADMIN, .n_in = 5,
     .in = {X_IN, MEMORY_IN, VEC_IN(C, 1.2f), VEC_IN(C, 1.3f), VEC_IN(C, 1.1f)}, .fwd_tol = 1e-9},
    {.name = "block_decoder_sigma", .build = build_block, .param = &DECODER_SIGMA, .n_in = 5,
     .in = {X_IN, MEMORY_IN, VEC_IN(1, 1.5f), VEC_IN(1, 1.2f), VEC_IN(1, 1.4f)}, .fwd_tol = 1e-9, .f16_tol = 2e-4},
    {.name = "block_decoder_gau", .build = build_block, .param = &DECODER_GAU, .n_in = 2, .in = {X_IN, MEMORY_IN},
     .fwd_tol = 1e-9},
    {.name = "block_llama_gqa", .build = build_block, .param = &LLAMA_GQA, .n_in = 3,
     .in = {X_IN, VEC_IN(C, 1.0f), VEC_IN(C, 1.0f)}, .fwd_tol = 1e-9},
    {.name = "block_qwen2_mqa_bias", .build = build_block, .param = &QWEN2_MQA, .n_in = 2,
     .in = {X_IN, VEC_IN(12, 0.0f)}, .fwd_tol = 1e-9},
    {.name = "block_qwen3_qk_norm", .build = build_block, .param = &QWEN3_QK_NORM, .n_in = 3,
     .in = {X_IN, VEC_IN(6, 1.0f), VEC_IN(6, 1.0f)}, .fwd_tol = 1e-9},
    {.name = "block_llama3_freqs", .build = build_block, .param = &LLAMA3_FREQS, .n_in = 1, .in = {X_IN},
     .fwd_tol = 1e-9},
    {.name = "block_rmsnorm_post_rezero", .build = build_block, .param = &RMS_POST_REZERO, .n_in = 4,
     .in = {X_IN, VEC_IN(1, 0.7f), VEC_IN(C, 1.0f),
            {.dtype = KILN_F32, .ndim = 2, .shape = {C, 12}, .init = KILN_INIT_NORMAL, .hi = 0.35f, .grad = 1}},
     .fwd_tol = 1e-9},
    /* gamma in f16 as above, summed here over SwiGLU's [C, 2F] (3.4e-4 on each backend, the
     * CPU's f16 included: f16's rounding, not a backend's) */
    {.name = "block_rmsnorm_sigma", .build = build_block, .param = &RMS_SIGMA, .n_in = 3,
     .in = {X_IN, VEC_IN(1, 1.5f), VEC_IN(1, 1.2f)}, .fwd_tol = 1e-9, .f16_tol = 1e-3},
    {.name = "block_gqa_gelu", .build = build_block, .param = &GQA_GELU_LEARNED, .n_in = 2,
     .in = {X_IN, VEC_IN(16, 0.0f)}, .fwd_tol = 1e-9},
    /* fused attention (block_config.attention_fused) against the same blocks unfused, and
     * against finite differences on the CPU: a Llama-style causal GQA stack, MQA, a BERT-style
     * padded encoder, a seq2seq decoder (causal self-attention, cross-attention to a padded
     * memory), the temperature, and RealFormer (whose self-attention stays unfused) */
    FUSED_CASE("block_fused_llama_gqa", FUSED_LLAMA_GQA, .n_in = 3, .in = {X_IN, VEC_IN(C, 1.0f), VEC_IN(C, 1.0f)}),
    FUSED_CASE("block_fused_qwen2_mqa", FUSED_QWEN2_MQA, .n_in = 2, .in = {X_IN, VEC_IN(12, 0.0f)}),
    FUSED_CASE("block_fused_encoder", FUSED_ENCODER, .n_in = 1, .in = {X_IN}),
    FUSED_CASE("block_fused_decoder", FUSED_DECODER, .n_in = 2, .in = {X_IN, MEMORY_IN}),
    FUSED_CASE("block_fused_temperature", FUSED_COLD, .n_in = 1, .in = {X_IN}, .f16_tol = 1e-4),
    /* its self-attention stays unfused: f16's rounding through three layers of accumulated
     * scores, as block_realformer's, on these inputs (seeded by the case's name) 7e-4 */
    FUSED_CASE("block_fused_realformer", FUSED_REALFORMER, .n_in = 1, .in = {X_IN}, .f16_tol = 1e-3),
};

/* ---- formulas by hand ---- */

static void download(const kiln_tensor *t, float *out) {
    ck_assert_msg(t != NULL, "%s", kiln_error_message());
    ck_assert_int_eq(kiln_download_f32(t, out, kiln_numel(t)), KILN_OK);
}

static kiln_tensor *random_x(kiln_ctx *ctx, int64_t B, int64_t T, uint64_t stream) {
    int64_t shape[3] = {B, T, C};
    kiln_tensor *x = kiln_tensor_temp(ctx, KILN_F32, 3, shape);
    ck_assert_int_eq(kiln_init_normal(x, 5, stream, 0.0f, 1.0f), KILN_OK);
    return x;
}

START_TEST(deepnorm_constants_follow_the_paper) {
    float a, b;
    block_deepnorm_constants(6, 0, 0, &a, &b); /* decoder-only, N = 6 */
    ck_assert_float_eq_tol(a, powf(12.0f, 0.25f), 1e-6f);
    ck_assert_float_eq_tol(b, powf(48.0f, -0.25f), 1e-6f);
    block_deepnorm_constants(6, 6, 0, &a, &b); /* encoder of a 6-6 encoder-decoder */
    ck_assert_float_eq_tol(a, 0.81f * powf(6.0f * 6 * 6 * 6 * 6, 1.0f / 16), 1e-5f);
    ck_assert_float_eq_tol(b, 0.87f * powf(6.0f * 6 * 6 * 6 * 6, -1.0f / 16), 1e-5f);
    block_deepnorm_constants(6, 6, 1, &a, &b); /* its decoder */
    ck_assert_float_eq_tol(a, powf(18.0f, 0.25f), 1e-6f);
    ck_assert_float_eq_tol(b, powf(72.0f, -0.25f), 1e-6f);
    /* the paper's table, N = 18 decoder-only: alpha = 36^(1/4) = 2.449, beta = 144^(-1/4) = 0.2887 */
    block_deepnorm_constants(18, 0, 0, &a, &b);
    ck_assert_float_eq_tol(a, 2.4495f, 1e-4f);
    ck_assert_float_eq_tol(b, 0.28868f, 1e-4f);
    /* Admin's closed form for 24 sublayers: sqrt(25 / ln 25 - 1) */
    ck_assert_float_eq_tol(block_admin_closed_omega(24), sqrtf(25.0f / logf(25.0f) - 1.0f), 1e-6f);
}
END_TEST

/* DeepNorm's init: the value columns of c_attn and the FFN have beta times the std of the
 * query and key columns' Xavier-normal. */
START_TEST(deepnorm_init_scales_by_beta) {
    enum { WIDE = 64 };
    block_options o = {.norm = BLOCK_NORM_POST, .residual = BLOCK_RESIDUAL_DEEPNORM};
    block_config c = config_of(&o, 6);
    c.n_embd = WIDE;
    param_spec spec = {.ndim = 2, .shape = {WIDE, 3 * WIDE}, .slot = BLOCK_QKV_W};
    kiln_tensor *w = kiln_tensor_new(kt_ctx(), KILN_F32, 2, spec.shape);
    ck_assert_int_eq(block_init_param(&c, &spec, w, 3, 7), KILN_OK);
    static float v[WIDE * 3 * WIDE];
    download(w, v);
    double sq[3] = {0, 0, 0};
    for (int r = 0; r < WIDE; r++)
        for (int k = 0; k < 3 * WIDE; k++) sq[k / WIDE] += (double)v[r * 3 * WIDE + k] * v[r * 3 * WIDE + k];
    double xavier = sqrt(2.0 / (2.0 * WIDE)), n = (double)WIDE * WIDE;
    ck_assert_double_eq_tol(sqrt(sq[0] / n), xavier, 0.05 * xavier);
    ck_assert_double_eq_tol(sqrt(sq[1] / n), xavier, 0.05 * xavier);
    ck_assert_double_eq_tol(sqrt(sq[2] / n), c.deepnorm_beta * xavier, 0.05 * c.deepnorm_beta * xavier);
    kiln_tensor_free(w);
}
END_TEST

/* ReZero at init (alpha = 0, no LayerNorm): the block is the identity. */
START_TEST(rezero_starts_as_the_identity) {
    kiln_ctx *ctx = kt_ctx();
    block_options o = {.norm = BLOCK_NORM_NONE, .residual = BLOCK_RESIDUAL_REZERO};
    block_config c = config_of(&o, 1);
    block_weights w;
    ck_assert_int_eq(make_weights(&c, 0, ctx, KILN_F32, &w), 0);
    ck_assert_int_eq(kiln_fill(w.w[BLOCK_REZERO_ALPHA], 0.0f), KILN_OK);
    kiln_tensor *x = random_x(ctx, 2, 5, 1);
    block_pass pass = {0};
    static float got[2 * 5 * C], want[2 * 5 * C];
    download(block_forward(&c, &w, 0, x, &pass, NULL, NULL), got);
    download(x, want);
    for (int i = 0; i < 2 * 5 * C; i++) ck_assert_float_eq(got[i], want[i]);
    kiln_step_reset(ctx);
}
END_TEST

/* Temperature T divides the scores: the same as dividing the query columns of c_attn (and
 * their bias) by T. */
START_TEST(temperature_divides_the_scores) {
    kiln_ctx *ctx = kt_ctx();
    block_options hot = {.norm = BLOCK_NORM_PRE, .attn_temperature = 2.0f}, plain = {.norm = BLOCK_NORM_PRE};
    block_config ch = config_of(&hot, 1), cp = config_of(&plain, 1);
    block_weights w;
    ck_assert_int_eq(make_weights(&cp, 0, ctx, KILN_F32, &w), 0);
    kiln_tensor *x = random_x(ctx, 2, 5, 2);
    block_pass p1 = {0}, p2 = {0};
    static float a[2 * 5 * C], b[2 * 5 * C], qkv[C * 3 * C], bias[3 * C];
    download(block_forward(&ch, &w, 0, x, &p1, NULL, NULL), a);
    download(w.w[BLOCK_QKV_W], qkv);
    download(w.w[BLOCK_QKV_B], bias);
    for (int r = 0; r < C; r++)
        for (int k = 0; k < C; k++) qkv[r * 3 * C + k] *= 0.5f;
    for (int k = 0; k < C; k++) bias[k] *= 0.5f;
    ck_assert_int_eq(kiln_upload_f32(w.w[BLOCK_QKV_W], qkv, C * 3 * C), KILN_OK);
    ck_assert_int_eq(kiln_upload_f32(w.w[BLOCK_QKV_B], bias, 3 * C), KILN_OK);
    download(block_forward(&cp, &w, 0, x, &p2, NULL, NULL), b);
    ck_assert_double_le(kt_normalized_error(a, b, 2 * 5 * C), 1e-10);
    kiln_step_reset(ctx);
}
END_TEST

/* RealFormer: each layer's raw scores add the previous layer's. Two layers with the same
 * weights on the same input: the second layer's scores are twice the first's. */
START_TEST(realformer_accumulates_scores) {
    kiln_ctx *ctx = kt_ctx();
    block_options o = {.norm = BLOCK_NORM_POST, .residual_attention = 1};
    block_config c = config_of(&o, 2);
    block_weights w;
    ck_assert_int_eq(make_weights(&c, 0, ctx, KILN_F32, &w), 0);
    kiln_tensor *x = random_x(ctx, 2, 5, 3);
    block_pass pass = {0};
    ck_assert_ptr_nonnull(block_forward(&c, &w, 0, x, &pass, NULL, NULL));
    static float first[2 * H * 5 * 5], second[2 * H * 5 * 5];
    ck_assert_int_eq((int)kiln_numel(pass.scores), 2 * H * 5 * 5);
    download(pass.scores, first);
    ck_assert_ptr_nonnull(block_forward(&c, &w, 1, x, &pass, NULL, NULL));
    download(pass.scores, second);
    for (int i = 0; i < 2 * H * 5 * 5; i++) ck_assert_float_eq_tol(second[i], 2.0f * first[i], 1e-5f * (1 + fabsf(first[i])));
    kiln_step_reset(ctx);
}
END_TEST

/* The largest eigenvalue of a symmetric n x n matrix (cyclic Jacobi): the reference sigma^2
 * for the power iteration, computed another way. */
static double top_eigenvalue(double *a, int n) {
    for (int sweep = 0; sweep < 100; sweep++) {
        double off = 0;
        for (int p = 0; p < n; p++)
            for (int q = p + 1; q < n; q++) off += a[p * n + q] * a[p * n + q];
        if (off < 1e-24) break;
        for (int p = 0; p < n; p++) {
            for (int q = p + 1; q < n; q++) {
                if (fabs(a[p * n + q]) < 1e-300) continue;
                double theta = (a[q * n + q] - a[p * n + p]) / (2 * a[p * n + q]);
                double t = (theta >= 0 ? 1 : -1) / (fabs(theta) + sqrt(theta * theta + 1));
                double cs = 1 / sqrt(t * t + 1), sn = t * cs;
                for (int k = 0; k < n; k++) { /* columns p, q */
                    double akp = a[k * n + p], akq = a[k * n + q];
                    a[k * n + p] = cs * akp - sn * akq;
                    a[k * n + q] = sn * akp + cs * akq;
                }
                for (int k = 0; k < n; k++) { /* rows p, q */
                    double apk = a[p * n + k], aqk = a[q * n + k];
                    a[p * n + k] = cs * apk - sn * aqk;
                    a[q * n + k] = sn * apk + cs * aqk;
                }
            }
        }
    }
    double best = a[0];
    for (int i = 1; i < n; i++) best = fmax(best, a[i * n + i]);
    return best;
}

/* sigma-reparam: after enough power iterations u^T W v is W's top singular value, and gamma
 * starts equal to it (the layer starts as it would without the reparametrization). */
START_TEST(sigma_is_the_top_singular_value) {
    kiln_ctx *ctx = kt_ctx();
    block_options o = {.norm = BLOCK_NORM_NONE, .sigma_reparam = 1};
    block_config c = config_of(&o, 1);
    block_weights w;
    ck_assert_int_eq(make_weights(&c, 0, ctx, KILN_F32, &w), 0);
    /* persistent copies: block_sigma_init resets the step arena between iterations */
    for (int s = 0; s < BLOCK_SLOT_COUNT; s++) {
        if (!w.w[s]) continue;
        kiln_tensor *p = kiln_tensor_new(ctx, KILN_F32, w.w[s]->ndim, w.w[s]->shape);
        ck_assert_int_eq(kiln_copy(p, w.w[s]), KILN_OK);
        w.w[s] = p;
    }
    ck_assert_int_eq(block_sigma_init(&c, &w, 11, 100, 200), KILN_OK);
    static float W[4 * C * C];
    static double ata[4 * C * 4 * C];
    float sigma, gamma;
    const struct { block_linear l; int in, out; } linears[] = {{BLOCK_LINEAR_QKV, C, 3 * C}, {BLOCK_LINEAR_FC, C, 4 * C},
                                                               {BLOCK_LINEAR_MLP_PROJ, 4 * C, C}};
    for (int k = 0; k < 3; k++) {
        int in = linears[k].in, out = linears[k].out;
        download(w.w[block_linear_slot(linears[k].l)], W);
        /* the smaller Gram matrix: its top eigenvalue is sigma^2 either way */
        int n = in < out ? in : out;
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++) {
                double sum = 0;
                if (n == in)
                    for (int t = 0; t < out; t++) sum += (double)W[i * out + t] * W[j * out + t];
                else
                    for (int t = 0; t < in; t++) sum += (double)W[t * out + i] * W[t * out + j];
                ata[i * n + j] = sum;
            }
        double reference = sqrt(top_eigenvalue(ata, n));
        ck_assert_int_eq(kiln_read_scalar(block_sigma(&w, linears[k].l), &sigma), KILN_OK);
        ck_assert_int_eq(kiln_read_scalar(w.w[BLOCK_SIGMA_GAMMA + linears[k].l], &gamma), KILN_OK);
        ck_assert_msg(fabs(sigma - reference) < 1e-3 * reference, "linear %d: sigma %g, SVD %g", (int)linears[k].l,
                      (double)sigma, reference);
        ck_assert_float_eq_tol(gamma, sigma, 1e-5f * sigma);
    }
    for (int s = 0; s < BLOCK_SLOT_COUNT; s++) kiln_tensor_free(w.w[s]);
    kiln_step_reset(ctx);
}
END_TEST

/* GAU at init (FLASH's near-zero Q/K scales): the unit's output is far smaller than its
 * input, so a deep GAU stack starts close to the identity. */
START_TEST(gau_starts_small) {
    kiln_ctx *ctx = kt_ctx();
    block_options o = {.norm = BLOCK_NORM_PRE, .layer = BLOCK_LAYER_GAU, .gau_s = 16};
    block_config c = config_of(&o, 4);
    c.n_embd = 32;
    param_spec specs[32];
    int n = block_param_specs(&c, "h.", 0, 0, specs);
    block_weights w = {0};
    for (int i = 0; i < n; i++) {
        w.w[specs[i].slot] = kiln_tensor_temp(ctx, KILN_F32, specs[i].ndim, specs[i].shape);
        ck_assert_int_eq(block_init_param(&c, &specs[i], w.w[specs[i].slot], 1, (uint64_t)i), KILN_OK);
    }
    int64_t shape[3] = {2, 16, 32};
    kiln_tensor *x = kiln_tensor_temp(ctx, KILN_F32, 3, shape);
    ck_assert_int_eq(kiln_init_normal(x, 5, 9, 0.0f, 1.0f), KILN_OK);
    kiln_tensor *branch[2] = {0};
    block_pass pass = {.branches = branch};
    ck_assert_ptr_nonnull(block_forward(&c, &w, 0, x, &pass, NULL, NULL));
    static float f[2 * 16 * 32];
    download(branch[0], f);
    double sq = 0;
    for (int i = 0; i < 2 * 16 * 32; i++) sq += (double)f[i] * f[i];
    double rms = sqrt(sq / (2 * 16 * 32));
    ck_assert_msg(rms < 0.05, "GAU's output rms at init is %g for an input of rms 1", rms);
    ck_assert_msg(rms > 0, "GAU's output is exactly zero: the unit is cut off");
    kiln_step_reset(ctx);
}
END_TEST

static double variance_of(const kiln_tensor *t) {
    int64_t n = kiln_numel(t);
    float *v = malloc((size_t)n * sizeof *v);
    download(t, v);
    double mean = 0, sq = 0;
    for (int64_t i = 0; i < n; i++) mean += v[i];
    mean /= (double)n;
    for (int64_t i = 0; i < n; i++) sq += (v[i] - mean) * (v[i] - mean);
    free(v);
    return sq / (double)n;
}

static const gpt_config TINY = {.n_layer = 2, .n_head = H, .n_embd = C, .n_positions = 8, .vocab_size = 16,
                                .ln_eps = GPT_DEFAULT_LN_EPS};

static kiln_tensor *tiny_ids(kiln_ctx *ctx, int B, int T, int salt) {
    int32_t ids[4 * 8];
    for (int i = 0; i < B * T; i++) ids[i] = (i * 7 + salt * 3 + i / 3) % 16;
    int64_t shape[2] = {B, T};
    kiln_tensor *t = kiln_tensor_temp(ctx, KILN_I32, 2, shape);
    ck_assert_int_eq(kiln_upload(t, ids, (size_t)(B * T) * sizeof *ids), KILN_OK);
    return t;
}

/* Admin's profiling: omega_1 = 1 and omega_{i+1}^2 = Var[omega_i x_i] + Var[f_i(x_i)],
 * checked against the skip and branch tensors of a pass with the final omegas. */
START_TEST(admin_profile_follows_the_recurrence) {
    kiln_ctx *ctx = kt_ctx();
    gpt_config cfg = TINY;
    cfg.n_layer = 3;
    cfg.block = (block_options){.norm = BLOCK_NORM_POST, .residual = BLOCK_RESIDUAL_ADMIN};
    gpt_model *m = gpt_new(ctx, &cfg);
    ck_assert_msg(m && gpt_init(m, 4) == KILN_OK, "%s", kiln_error_message());
    float omegas[6];
    ck_assert_msg(gpt_admin_profile(m, tiny_ids(ctx, 4, 8, 1), omegas) == KILN_OK, "%s", kiln_error_message());
    ck_assert_float_eq(omegas[0], 1.0f);
    kiln_tensor *skips[6] = {0}, *branches[6] = {0};
    block_pass pass = {.skips = skips, .branches = branches};
    kiln_set_grad_enabled(ctx, 0);
    kiln_tensor *ids = tiny_ids(ctx, 4, 8, 1), *x = kiln_add(kiln_embedding(m->wte, ids), kiln_view_rows(m->wpe, 0, 8));
    for (int l = 0; l < 3; l++) x = block_forward(&m->block, &m->blocks[l], l, x, &pass, NULL, NULL);
    ck_assert_ptr_nonnull(x);
    for (int i = 0; i < 5; i++) {
        double want = sqrt(variance_of(skips[i]) + variance_of(branches[i]));
        ck_assert_msg(fabs(omegas[i + 1] - want) < 1e-4 * want, "omega %d = %g, want %g", i + 2, (double)omegas[i + 1], want);
        ck_assert(isfinite(omegas[i + 1]) && omegas[i + 1] > 0);
    }
    float got;
    ck_assert_int_eq(kiln_read_scalar(m->blocks[2].w[BLOCK_ADMIN_OMEGA_2], &got), KILN_OK);
    ck_assert_float_eq(got, omegas[5]);
    kiln_set_grad_enabled(ctx, 1);
    kiln_step_reset(ctx);
    gpt_free(m);
}
END_TEST

/* ---- whole models ---- */

/* The block options and, for the Llama family, the model's sizes and choices. */
static const gpt_config model_options[] = {
    {.block = {.norm = BLOCK_NORM_PRE}},
    {.block = {.norm = BLOCK_NORM_POST}},
    {.block = {.norm = BLOCK_NORM_NONE, .residual = BLOCK_RESIDUAL_REZERO}},
    {.block = {.norm = BLOCK_NORM_POST, .residual = BLOCK_RESIDUAL_ADMIN}},
    {.block = {.norm = BLOCK_NORM_POST, .residual = BLOCK_RESIDUAL_DEEPNORM}},
    {.block = {.norm = BLOCK_NORM_PRE, .sigma_reparam = 1}},
    {.block = {.norm = BLOCK_NORM_POST, .residual_attention = 1, .attn_temperature = 0.5f}},
    {.block = {.norm = BLOCK_NORM_PRE, .layer = BLOCK_LAYER_GAU, .gau_s = 4}},
    {.block = {.norm = BLOCK_NORM_POST, .layer = BLOCK_LAYER_GAU, .gau_s = 4, .gau_attn = BLOCK_GAU_SOFTMAX,
               .sigma_reparam = 1}},
    /* Llama: GQA, rope, SwiGLU, RMSNorm, untied; Qwen3: q/k norm, head_dim 6, qkv biases,
       Llama 3's rope.freqs; RMSNorm Post-LN with sigma-reparam and learned positions */
    {.block = {.norm_type = BLOCK_NORM_TYPE_RMSNORM, .mlp = BLOCK_MLP_SWIGLU, .bias = BLOCK_BIAS_NONE,
               .rope_layout = KILN_ROPE_HALF},
     .n_kv_head = 1, .untied = 1, .position = GPT_POSITION_ROPE},
    {.block = {.norm_type = BLOCK_NORM_TYPE_RMSNORM, .mlp = BLOCK_MLP_SWIGLU, .bias = BLOCK_BIAS_QKV, .qk_norm = 1,
               .rope_base = 1e6f, .rope_layout = KILN_ROPE_HALF},
     .n_kv_head = 1, .head_dim = 6, .n_ffn = 10, .position = GPT_POSITION_ROPE, .rope_freqs = 1},
    {.block = {.norm = BLOCK_NORM_POST, .norm_type = BLOCK_NORM_TYPE_RMSNORM, .sigma_reparam = 1},
     .n_kv_head = 1, .n_ffn = 12},
};
enum { N_MODEL_OPTIONS = sizeof model_options / sizeof model_options[0] };

static gpt_model *tiny_model(int which) {
    gpt_config cfg = model_options[which];
    cfg.n_layer = TINY.n_layer, cfg.n_head = TINY.n_head, cfg.n_embd = TINY.n_embd;
    cfg.n_positions = TINY.n_positions, cfg.vocab_size = TINY.vocab_size, cfg.ln_eps = TINY.ln_eps;
    char err[256];
    ck_assert_msg(gpt_config_check(&cfg, err, sizeof err) == 0, "%s", err);
    gpt_model *m = gpt_new(kt_ctx(), &cfg);
    ck_assert_msg(m && gpt_init(m, 21) == KILN_OK, "%s", kiln_error_message());
    /* nonzero ReZero alphas and Admin omegas, so the blocks count */
    for (int i = 0; i < m->n_params; i++) {
        int slot = m->params[i].spec.slot;
        if (m->params[i].spec.layer >= 0 && (slot == BLOCK_REZERO_ALPHA || slot == BLOCK_ADMIN_OMEGA_1))
            ck_assert_int_eq(kiln_fill(m->params[i].t, 0.8f), KILN_OK);
    }
    /* frequency factors that change the rotation, as Llama 3's scaling has them */
    if (m->rope_freqs) ck_assert_int_eq(kiln_upload_f32(m->rope_freqs, (const float[]){1.0f, 3.0f, 8.0f}, 3), KILN_OK);
    return m;
}

static void logits_of(gpt_model *m, kiln_tensor *ids, float *out) {
    kiln_set_grad_enabled(m->ctx, 0);
    download(gpt_forward(m, ids, 0.0f), out);
    kiln_set_grad_enabled(m->ctx, 1);
}

/* Every option survives a save and a load: the same logits, and the metadata rebuilds the
 * same block. */
START_TEST(checkpoint_round_trip_keeps_every_option) {
    kiln_ctx *ctx = kt_ctx();
    char path[64];
    snprintf(path, sizeof path, "/tmp/kiln_block_%d.safetensors", (int)getpid());
    for (int k = 0; k < N_MODEL_OPTIONS; k++) {
        gpt_model *m = tiny_model(k), *back = NULL;
        static float a[2 * 8 * 16], b[2 * 8 * 16];
        logits_of(m, tiny_ids(ctx, 2, 8, k), a);
        char err[512];
        ck_assert_msg(gpt_checkpoint_save(m, path, NULL, 0, err, sizeof err) == 0, "%s", err);
        ck_assert_msg(gpt_checkpoint_load(ctx, path, &back, err, sizeof err) == 0, "option set %d: %s", k, err);
        ck_assert_int_eq(back->n_params, m->n_params);
        ck_assert_int_eq(back->n_buffers, m->n_buffers);
        ck_assert(memcmp(&back->block.o, &m->block.o, sizeof m->block.o) == 0);
        ck_assert(memcmp(&back->cfg, &m->cfg, sizeof m->cfg) == 0);
        logits_of(back, tiny_ids(ctx, 2, 8, k), b);
        ck_assert_msg(kt_normalized_error(a, b, 2 * 8 * 16) == 0.0, "option set %d: logits differ after a reload", k);
        kiln_step_reset(ctx);
        gpt_free(back);
        gpt_free(m);
    }
    unlink(path);
}
END_TEST

/* Decoding with the KV cache, a token at a time, gives the full pass's last logits for
 * every option (RealFormer's scores and GAU's 1/n weights over cached keys included). */
START_TEST(kv_cache_matches_the_full_pass) {
    kiln_ctx *ctx = kt_ctx();
    for (int k = 0; k < N_MODEL_OPTIONS; k++) {
        gpt_model *m = tiny_model(k);
        kiln_set_grad_enabled(ctx, 0);
        const int32_t ids[6] = {3, 9, 1, 14, 7, 2};
        int64_t shape[2] = {1, 6};
        kiln_tensor *t = kiln_tensor_temp(ctx, KILN_I32, 2, shape);
        ck_assert_int_eq(kiln_upload(t, ids, sizeof ids), KILN_OK);
        static float full[6 * 16], step[16];
        download(gpt_forward(m, t, 0.0f), full);
        gpt_kv_cache *cache = gpt_kv_new(m);
        ck_assert_ptr_nonnull(cache);
        ck_assert_ptr_nonnull(gpt_forward_cached(m, cache, ids, 3)); /* a prompt of 3 */
        for (int i = 3; i < 6; i++) {
            kiln_tensor *l = gpt_forward_cached(m, cache, ids + i, 1);
            download(l, step);
        }
        ck_assert_msg(kt_normalized_error(full + 5 * 16, step, 16) < 1e-10, "option set %d: cached logits differ", k);
        kiln_set_grad_enabled(ctx, 1);
        kiln_step_reset(ctx);
        gpt_kv_free(cache);
        gpt_free(m);
    }
}
END_TEST

/* A GPT's loss (dropout 0.2 on, the stream pinned) and every gradient, with attention fused
 * or not (block_config.attention_fused: a run-time choice on the same weights). */
typedef struct fused_run {
    gpt_model *m;
    kiln_tensor *ids, *targets;
} fused_run;

static kiln_tensor *dropout_loss(void *user) {
    fused_run *r = user;
    kiln_set_rng_stream(r->m->ctx, 0);
    return gpt_loss(r->m, r->ids, r->targets, 0.2f, NULL);
}

static float *gpt_loss_and_grads(gpt_model *m, int fused, int64_t *n) {
    kiln_tensor *weights[128];
    int count = 0;
    for (int i = 0; i < m->n_params && count < 128; i++)
        if (kiln_requires_grad(m->params[i].t)) weights[count++] = m->params[i].t;
    m->block.attention_fused = fused;
    fused_run r = {.m = m, .ids = tiny_ids(m->ctx, 2, 8, 1), .targets = tiny_ids(m->ctx, 2, 8, 2)};
    return kt_loss_and_grads(m->ctx, weights, count, dropout_loss, &r, n);
}

/* The logits of KV-cache decoding: a prompt of 3, then one token at a time (the fused op's
 * decode step: one query at the end of the cached keys). */
static void cached_logits(gpt_model *m, const int32_t *ids, float *out) {
    gpt_kv_cache *cache = gpt_kv_new(m);
    ck_assert_ptr_nonnull(cache);
    ck_assert_ptr_nonnull(gpt_forward_cached(m, cache, ids, 3));
    for (int i = 3; i < 6; i++) download(gpt_forward_cached(m, cache, ids + i, 1), out + (i - 3) * 16);
    gpt_kv_free(cache);
}

/* Every option set (GPT-2, Llama-style GQA with rope, Qwen3, RealFormer and GAU, which keep
 * their unfused attention) gives the same loss with dropout, gradients and KV-cache
 * decoding with fused attention as without, and fused attention keeps no [T, T] scores. */
START_TEST(fused_attention_matches_unfused) {
    kiln_ctx *ctx = kt_ctx();
    for (int k = 0; k < N_MODEL_OPTIONS; k++) {
        gpt_model *m = tiny_model(k);
        int64_t n;
        float *unfused = gpt_loss_and_grads(m, 0, &n), *fused = gpt_loss_and_grads(m, 1, &n);
        ck_assert_msg(fabsf(fused[0] - unfused[0]) <= 1e-6f * fabsf(unfused[0]), "option set %d: loss %.9g fused, %.9g unfused",
                      k, (double)fused[0], (double)unfused[0]);
        double err = kt_normalized_error(unfused + 1, fused + 1, n - 1);
        ck_assert_msg(err < 1e-9, "option set %d: gradients differ by %g fused", k, err);
        free(unfused), free(fused);
        kiln_set_grad_enabled(ctx, 0);
        kiln_set_training(ctx, 0);
        const int32_t ids[6] = {3, 9, 1, 14, 7, 2};
        static float want[3 * 16], got[3 * 16];
        m->block.attention_fused = 0;
        cached_logits(m, ids, want);
        m->block.attention_fused = 1;
        cached_logits(m, ids, got);
        ck_assert_msg(kt_normalized_error(want, got, 3 * 16) < 1e-10, "option set %d: fused decoding differs", k);
        kiln_set_training(ctx, 1);
        kiln_set_grad_enabled(ctx, 1);
        kiln_step_reset(ctx);
        gpt_free(m);
    }
}
END_TEST

/* The model really takes the fused path: a step of a block at T = 512 uses a small part of
 * the arena its unfused step does (the [B, H, T, T] scores, probabilities and their
 * gradients: 2 MiB each). */
START_TEST(fused_attention_keeps_no_scores) {
    kiln_ctx *ctx = kt_ctx();
    block_case bc = PRE;
    size_t peak[2];
    for (int fused = 1; fused >= 0; fused--) {
        bc.fused = fused;
        int64_t shape[3] = {1, 512, C};
        kiln_tensor *x = kiln_tensor_temp(ctx, KILN_F32, 3, shape);
        ck_assert_int_eq(kiln_init_normal(x, 5, 1, 0.0f, 1.0f), KILN_OK);
        kiln_set_requires_grad(x, 1);
        kiln_tensor *y = build_block(&x, &bc);
        ck_assert_msg(y && kiln_backward(kiln_sum(y), 1.0f) == KILN_OK, "%s", kiln_error_message());
        kiln_step_reset(ctx);
        peak[fused] = kiln_memory_arena_peak(ctx); /* the most any step used so far */
    }
    ck_assert_msg(peak[1] * 4 < peak[0], "fused step %zu bytes, unfused %zu", peak[1], peak[0]);
}
END_TEST

/* Attention entropy lies in [0, ln Tk] and falls as the temperature does. */
START_TEST(entropy_falls_with_the_temperature) {
    kiln_ctx *ctx = kt_ctx();
    gpt_model *m = tiny_model(0);
    /* larger weights than GPT-2's init, so the scores are not all near zero */
    for (int i = 0; i < m->n_params; i++)
        if (m->params[i].spec.slot == BLOCK_QKV_W && m->params[i].spec.layer >= 0)
            ck_assert_int_eq(kiln_init_normal(m->params[i].t, 3, (uint64_t)i, 0.0f, 0.8f), KILN_OK);
    double previous = INFINITY;
    const float temperatures[3] = {4.0f, 1.0f, 0.1f};
    for (int k = 0; k < 3; k++) {
        gpt_set_attn_temperature(m, temperatures[k]);
        double per_layer[2], lowest;
        ck_assert_int_eq(gpt_attention_entropy(m, tiny_ids(ctx, 2, 8, 5), per_layer, &lowest), KILN_OK);
        for (int l = 0; l < 2; l++) {
            ck_assert(per_layer[l] >= 0 && per_layer[l] <= log(8.0));
            ck_assert(lowest <= per_layer[l] + 1e-9);
        }
        ck_assert_msg(per_layer[0] < previous, "entropy %g at T = %g is not below the warmer one's", per_layer[0],
                      (double)temperatures[k]);
        previous = per_layer[0];
    }
    gpt_free(m);
}
END_TEST

START_TEST(nonsense_combinations_are_refused) {
    char err[256];
    const struct { block_options o; const char *says; } refused[] = {
        {.o = {.norm = BLOCK_NORM_PRE, .residual = BLOCK_RESIDUAL_ADMIN, .attn_temperature = 1, .gau_s = 8},
         .says = "residual admin needs norm post"},
        {.o = {.norm = BLOCK_NORM_NONE, .residual = BLOCK_RESIDUAL_DEEPNORM, .attn_temperature = 1, .gau_s = 8},
         .says = "residual deepnorm needs norm post"},
        {.o = {.layer = BLOCK_LAYER_GAU, .residual_attention = 1, .attn_temperature = 1, .gau_s = 8},
         .says = "residual-attention needs every layer to have the same heads"},
        {.o = {.attn_temperature = 0, .gau_s = 8}, .says = "attention temperature 0 must be a positive number"},
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        ck_assert_int_eq(block_options_check(&refused[i].o, err, sizeof err), -1);
        ck_assert_msg(strstr(err, refused[i].says) != NULL, "got: %s", err);
    }
    block_options fine = block_options_default();
    ck_assert_int_eq(block_options_check(&fine, err, sizeof err), 0);
    /* rotary positions turn attention heads: GAU and RealFormer are refused by name */
    block_options gau = fine, realformer = fine;
    gau.rope = realformer.rope = 1;
    gau.layer = BLOCK_LAYER_GAU;
    realformer.residual_attention = 1;
    ck_assert_int_eq(block_options_check(&gau, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "position rope does not apply to layer-type gau") != NULL, "got: %s", err);
    ck_assert_int_eq(block_options_check(&realformer, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "position rope does not combine with residual-attention") != NULL, "got: %s", err);
    /* the model's sizes */
    const struct { gpt_config c; const char *says; } sizes[] = {
        {.c = {.n_kv_head = 3}, .says = "n_kv_head = 3 is out of range"},
        {.c = {.n_head = 4, .n_kv_head = 3}, .says = "n_kv_head = 3 does not divide n_head = 4"},
        {.c = {.head_dim = 3, .position = GPT_POSITION_ROPE}, .says = "needs an even head width"},
        {.c = {.rope_freqs = 1}, .says = "rope_freqs (rope scaling) needs position rope"},
    };
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        gpt_config c = sizes[i].c;
        c.n_layer = 1, c.n_embd = 8, c.n_positions = 8, c.vocab_size = 16, c.ln_eps = 1e-5f;
        if (!c.n_head) c.n_head = 2;
        ck_assert_int_eq(gpt_config_check(&c, err, sizeof err), -1);
        ck_assert_msg(strstr(err, sizes[i].says) != NULL, "got: %s", err);
    }
}
END_TEST

/* Llama 3's rope scaling as frequency factors, against transformers'
 * _compute_llama3_parameters evaluated in float64 (tests' PyTorch, printed once): Llama
 * 3.2's own constants (head 64, theta 500000, factor 32, bands 1 and 4, 8192 positions) and
 * a small head whose four pairs fall in each band. */
START_TEST(llama3_rope_scaling_is_hf_s) {
    char err[256];
    float f[32];
    gpt_rope_llama3 llama32 = {.factor = 32, .low_freq_factor = 1, .high_freq_factor = 4,
                               .original_max_position_embeddings = 8192};
    ck_assert_int_eq(gpt_rope_llama3_freqs(&llama32, 64, 500000.0, f, err, sizeof err), 0);
    const struct { int i; double want; } at[] = {{0, 1}, {14, 1}, {15, 1.65132925}, {16, 3.2922621},
                                                 {17, 9.66672898}, {18, 32}, {31, 32}};
    for (size_t k = 0; k < sizeof at / sizeof at[0]; k++)
        ck_assert_msg(fabs(f[at[k].i] - at[k].want) < 1e-6 * at[k].want, "pair %d: %.9g, want %.9g", at[k].i,
                      (double)f[at[k].i], at[k].want);
    gpt_rope_llama3 small = {.factor = 8, .low_freq_factor = 1, .high_freq_factor = 4,
                             .original_max_position_embeddings = 64};
    ck_assert_int_eq(gpt_rope_llama3_freqs(&small, 8, 10000.0, f, err, sizeof err), 0);
    const double want[4] = {1, 7.66738513, 8, 8};
    for (int i = 0; i < 4; i++) ck_assert_msg(fabs(f[i] - want[i]) < 1e-6 * want[i], "pair %d: %.9g", i, (double)f[i]);
    gpt_rope_llama3 bad = small;
    bad.high_freq_factor = 0.5;
    ck_assert_int_eq(gpt_rope_llama3_freqs(&bad, 8, 10000.0, f, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "high_freq_factor above") != NULL, "got: %s", err);
}
END_TEST

/* A GPT-2 checkpoint carries none of the Llama family's keys (its file is what it was before
 * they existed); a Llama-shaped one carries those that differ. */
START_TEST(llama_keys_only_where_they_differ) {
    char path[64], err[256], value[32];
    snprintf(path, sizeof path, "/tmp/kiln_block_keys_%d.safetensors", (int)getpid());
    static const char *const keys[] = {"kiln.norm_type", "kiln.mlp", "kiln.bias", "kiln.rope", "n_kv_head",
                                       "untied", "position"};
    for (int which = 0; which < 2; which++) {
        gpt_model *m = tiny_model(which ? 9 : 0);
        ck_assert_msg(gpt_checkpoint_save(m, path, NULL, 0, err, sizeof err) == 0, "%s", err);
        for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
            ck_assert_int_eq(model_checkpoint_meta(path, keys[k], value, sizeof value, err, sizeof err), which);
        gpt_free(m);
    }
    ck_assert_int_eq(model_checkpoint_meta(path, "kiln.mlp", value, sizeof value, err, sizeof err), 1);
    ck_assert_str_eq(value, "swiglu");
    unlink(path);
}
END_TEST

static void add_tests(Suite *s, TCase *tc) {
    (void)s;
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, deepnorm_constants_follow_the_paper);
    tcase_add_test(tc, deepnorm_init_scales_by_beta);
    tcase_add_test(tc, rezero_starts_as_the_identity);
    tcase_add_test(tc, temperature_divides_the_scores);
    tcase_add_test(tc, realformer_accumulates_scores);
    tcase_add_test(tc, sigma_is_the_top_singular_value);
    tcase_add_test(tc, gau_starts_small);
    tcase_add_test(tc, admin_profile_follows_the_recurrence);
    tcase_add_test(tc, checkpoint_round_trip_keeps_every_option);
    tcase_add_test(tc, kv_cache_matches_the_full_pass);
    tcase_add_test(tc, entropy_falls_with_the_temperature);
    tcase_add_test(tc, nonsense_combinations_are_refused);
    tcase_add_test(tc, llama3_rope_scaling_is_hf_s);
    tcase_add_test(tc, llama_keys_only_where_they_differ);
    tcase_add_test(tc, fused_attention_matches_unfused);
    tcase_add_test(tc, fused_attention_keeps_no_scores);
}

int main(int argc, char **argv) {
    return kt_main(argc, argv, "host_block", add_tests, cases, (int)(sizeof cases / sizeof cases[0]));
}
