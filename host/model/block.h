/* The transformer block every kiln model is built from, with the training-stability options
 * of the literature (docs/stability.md):
 *
 *   norm placement   pre:  x <- x + r(F(LN(x)))          (and the model ends with a final LN)
 *                    post: x <- LN(s(x) + r(F(x)))
 *                    none: x <- s(x) + r(F(x))
 *   residual         plain: s(x) = x, r(f) = f
 *                    rezero:   r(f) = alpha * f, one learned scalar per block, alpha = 0 at init
 *                    admin:    s(x) = x (.) omega, a learned vector per sublayer (Post-LN only)
 *                    deepnorm: s(x) = alpha * x, a constant; init scaled by beta (Post-LN only)
 *   layer            transformer: two sublayers, causal multi-head attention and a 4x GELU MLP
 *                    gau: one sublayer, the gated attention unit of FLASH (Hua et al. 2022)
 *   attention        temperature T divides the scores; RealFormer passes each layer's raw scores
 *                    on to the next (S_n = QK^T / sqrt(d) + S_{n-1}, masked in each layer)
 *   sigma-reparam    every linear weight W is used as (gamma / sigma(W)) W
 *
 * One config struct, one forward built from engine ops, and one table that names the
 * parameters for checkpoints (block_param_specs). A model builds its blocks from here; a new
 * option touches this module, its tests and docs/stability.md, not the models. Nothing here
 * prints: failures return NULL or a status with the engine's last error set. */
#ifndef KILN_HOST_MODEL_BLOCK_H
#define KILN_HOST_MODEL_BLOCK_H

#include <stddef.h>
#include <stdint.h>

#include "kiln/kiln.h"

typedef enum block_norm { BLOCK_NORM_PRE, BLOCK_NORM_POST, BLOCK_NORM_NONE, BLOCK_NORM_COUNT } block_norm;
typedef enum block_residual {
    BLOCK_RESIDUAL_PLAIN,
    BLOCK_RESIDUAL_REZERO,
    BLOCK_RESIDUAL_ADMIN,
    BLOCK_RESIDUAL_DEEPNORM,
    BLOCK_RESIDUAL_COUNT
} block_residual;
typedef enum block_layer { BLOCK_LAYER_TRANSFORMER, BLOCK_LAYER_GAU, BLOCK_LAYER_COUNT } block_layer;
typedef enum block_gau_attn { BLOCK_GAU_RELU2, BLOCK_GAU_SOFTMAX, BLOCK_GAU_ATTN_COUNT } block_gau_attn;

/* The names users type and checkpoints store, indexed by the enums above. */
extern const char *const block_norm_names[BLOCK_NORM_COUNT];         /* pre post none */
extern const char *const block_residual_names[BLOCK_RESIDUAL_COUNT]; /* plain rezero admin deepnorm */
extern const char *const block_layer_names[BLOCK_LAYER_COUNT];       /* transformer gau */
extern const char *const block_gau_attn_names[BLOCK_GAU_ATTN_COUNT]; /* relu2 softmax */

/* The index of `text` among names[0..count), or -1. */
int block_choice(const char *const *names, int count, const char *text);

/* What a user chooses; the model's sizes live beside it in the model's config. */
typedef struct block_options {
    block_norm norm;
    block_residual residual;
    block_layer layer;
    int sigma_reparam;      /* sigma-reparam on every linear weight */
    int residual_attention; /* RealFormer */
    float attn_temperature; /* divides the attention scores; 1 */
    int gau_s;              /* GAU's shared key/query width; 128 */
    block_gau_attn gau_attn;
} block_options;

/* GPT-2's block: pre, plain, transformer, no sigma-reparam, no RealFormer, T = 1, s = 128. */
block_options block_options_default(void);
/* Gives the options that have no meaningful zero (the attention temperature, GAU's s) their
 * defaults where they are zero, as a config zero-initialized by a caller leaves them. */
void block_options_fill_defaults(block_options *o);

/* Refuses combinations that make no sense, with one line saying why: Admin and DeepNorm
 * with any norm placement but post, RealFormer with GAU layers (one head of width s: the
 * scores of a layer cannot pass to a layer with a different head count), a temperature
 * that is not a positive number, a GAU width out of range. Returns 0 or -1 with err. */
int block_options_check(const block_options *o, char *err, size_t errlen);

/* The options as checkpoint metadata: put(ctx, key, value) for each ("kiln.norm" = "post",
 * ...); from_meta reads them back with get(ctx, key) (NULL when absent: that option's
 * default) and checks them. Returns 0 or -1 with a one-line message. */
typedef void (*block_meta_put)(void *ctx, const char *key, const char *value);
typedef const char *(*block_meta_get)(void *ctx, const char *key);
void block_options_to_meta(const block_options *o, block_meta_put put, void *ctx);
int block_options_from_meta(block_options *o, block_meta_get get, void *ctx, char *err, size_t errlen);

/* One block as built: the options plus what the model decides. */
typedef struct block_config {
    int n_embd, n_head;
    float ln_eps;
    block_options o;
    /* what the model's role asks of the block (all zero: GPT's causal decoder block) */
    int bidirectional;   /* self-attention sees every key (an encoder), not only the past */
    int cross_attention; /* a decoder's sublayer attending to the encoder's output */
    kiln_act mlp_act;    /* the MLP's activation: GELU (GPT, BERT) or ReLU (Vaswani et al.) */
    int xavier_init;     /* Xavier-normal matrices (the original Transformer's, fan-aware: a
                            small model's attention starts sharp enough to learn alignments),
                            not GPT-2's N(0, 0.02); DeepNorm's init is Xavier too */
    float deepnorm_alpha; /* s(x) = alpha * x under DeepNorm (1 otherwise) */
    float deepnorm_beta;  /* DeepNorm's init gain of the value, output and FFN weights */
    float proj_std;       /* GPT-2's init std of the residual projections: 0.02 / sqrt(2 L) */
} block_config;

/* DeepNorm's constants (Wang et al. 2022): for an encoder-only or decoder-only stack of N
 * layers (pass M = 0) alpha = (2N)^(1/4), beta = (8N)^(-1/4); for an encoder-decoder with N
 * encoder and M decoder layers, the encoder's alpha = 0.81 (N^4 M)^(1/16),
 * beta = 0.87 (N^4 M)^(-1/16) and the decoder's alpha = (3M)^(1/4), beta = (12M)^(-1/4). */
void block_deepnorm_constants(int n_layers, int m_decoder_layers, int is_decoder, float *alpha,
                              float *beta);

/* Admin's closed-form omega for N residual sublayers: sqrt((N + 1) / ln(N + 1) - 1). */
float block_admin_closed_omega(int n_sublayers);

/* Residual sublayers per block of a causal stack: 2 (attention, MLP) or 1 (GAU). */
int block_sublayers(const block_options *o);
/* Residual sublayers of a block as configured: block_sublayers, plus cross-attention's. */
int block_config_sublayers(const block_config *c);

/* ---- parameters ---- */

/* Every tensor a block can own. Which exist depends on the options (block_param_specs). */
typedef enum block_slot {
    BLOCK_LN1_W, BLOCK_LN1_B,
    BLOCK_QKV_W, BLOCK_QKV_B,             /* attn.c_attn: [C, 3C] (q, k, v side by side) */
    BLOCK_ATTN_PROJ_W, BLOCK_ATTN_PROJ_B, /* attn.c_proj: [C, C] */
    BLOCK_LN2_W, BLOCK_LN2_B,
    BLOCK_FC_W, BLOCK_FC_B,               /* mlp.c_fc: [C, 4C] */
    BLOCK_MLP_PROJ_W, BLOCK_MLP_PROJ_B,   /* mlp.c_proj: [4C, C] */
    BLOCK_GAU_UVZ_W, BLOCK_GAU_UVZ_B,     /* gau.uvz: [C, 2e + s] (U, V, Z side by side) */
    BLOCK_GAU_QK_SCALE, BLOCK_GAU_QK_OFFSET, /* [2, s]: row 0 makes Q from Z, row 1 K */
    BLOCK_GAU_O_W, BLOCK_GAU_O_B,         /* gau.o: [e, C] */
    BLOCK_REZERO_ALPHA,                   /* [1] */
    BLOCK_ADMIN_OMEGA_1, BLOCK_ADMIN_OMEGA_2, /* [C] per sublayer */
    /* cross-attention (decoder blocks): queries from the stream, keys and values from the
     * encoder's output */
    BLOCK_LNX_W, BLOCK_LNX_B,             /* ln_cross */
    BLOCK_XQ_W, BLOCK_XQ_B,               /* cross.q: [C, C] */
    BLOCK_XKV_W, BLOCK_XKV_B,             /* cross.kv: [C, 2C] (k, v side by side) */
    BLOCK_XPROJ_W, BLOCK_XPROJ_B,         /* cross.c_proj: [C, C] */
    BLOCK_ADMIN_OMEGA_X,                  /* [C] */
    BLOCK_SIGMA_GAMMA,                    /* + block_linear: [1] learned */
    BLOCK_SIGMA_U = BLOCK_SIGMA_GAMMA + 9, /* + block_linear: [in] buffer */
    BLOCK_SIGMA_V = BLOCK_SIGMA_U + 9,     /* + block_linear: [out] buffer */
    BLOCK_SLOT_COUNT = BLOCK_SIGMA_V + 9
} block_slot;

/* The linear weights sigma-reparam applies to. */
typedef enum block_linear {
    BLOCK_LINEAR_QKV, BLOCK_LINEAR_ATTN_PROJ, BLOCK_LINEAR_FC, BLOCK_LINEAR_MLP_PROJ,
    BLOCK_LINEAR_GAU_UVZ, BLOCK_LINEAR_GAU_O,
    BLOCK_LINEAR_CROSS_Q, BLOCK_LINEAR_CROSS_KV, BLOCK_LINEAR_CROSS_PROJ,
    BLOCK_LINEAR_COUNT
} block_linear;
/* The weight slot of a linear. */
block_slot block_linear_slot(block_linear l);

/* A tensor's checkpoint name, shape and role. */
typedef struct param_spec {
    char name[64];  /* "h.3.attn.c_attn.weight" */
    int ndim;
    int64_t shape[2];
    int decay;      /* weight decay applies (matrices and embeddings) */
    int buffer;     /* not trained (sigma-reparam's u and v): no gradient, no optimizer */
    int layer;      /* the block it belongs to, -1 for the model's own */
    int slot;       /* block_slot within the block, or the model's own numbering */
} param_spec;

/* The tensors of block `layer` named "<prefix><layer>.<name>" (prefix "h." for the GPT), in
 * checkpoint order: the trained ones when buffers == 0 (GPT-2's names and order first, so a
 * default block is Hugging Face's GPT-2 block), the buffers when buffers == 1. Writes them
 * to out when it is not NULL and returns their number. */
int block_param_specs(const block_config *c, const char *prefix, int layer, int buffers,
                      param_spec *out);

/* A block's tensors by slot (NULL where the options make none). */
typedef struct block_weights {
    kiln_tensor *w[BLOCK_SLOT_COUNT];
    /* a linear's weight quantized (kiln/quant.h: [out][in] blocks), used instead of its
       w[] (then NULL) by a model read from a quantized GGUF (model/gpt/gpt_gguf.h); its bias stays
       in w[]. NULL: the f32/f16 weight. */
    kiln_qmatrix *q[BLOCK_SLOT_COUNT];
} block_weights;

/* Initialises one tensor of a block from the counter RNG's (seed, stream):
 *   GPT-2: matrices normal(0, 0.02), the residual projections normal(0, proj_std), biases 0,
 *     LayerNorm weights 1; GAU's Q/K scales normal(0, 0.02), offsets 0;
 *   DeepNorm: Xavier-normal, scaled by beta for the FFN, value and output projections (and
 *     GAU's U, V and output), gain 1 for the query and key (and GAU's Z);
 *   ReZero alpha 0, Admin omega 1 (block_admin_profile or the closed form set it after);
 *   sigma-reparam's gamma, u and v are set by block_sigma_init once the weights are.
 * `t` is the f32 weight the spec describes. */
kiln_status block_init_param(const block_config *c, const param_spec *spec, kiln_tensor *t,
                             uint64_t seed, uint64_t stream);

/* ---- sigma-reparam (Zhai et al. 2023) ----
 * sigma(W) is estimated as u^T W v with u, v from power iteration (buffers, no gradient
 * through the iteration); the layer uses W_hat = (gamma / sigma) W, differentiable in W and
 * gamma through sigma = u^T W v. `masters` holds the f32 weights. */
/* Draws u and v (stream `stream`), runs `iterations` power-iteration steps and sets gamma to
 * the resulting sigma, so the block starts as it would without the reparametrization. */
kiln_status block_sigma_init(const block_config *c, block_weights *masters, uint64_t seed,
                             uint64_t stream, int iterations);
/* One power-iteration step per linear: u <- W v / |W v|, v <- W^T u / |W^T u|. Not recorded. */
kiln_status block_sigma_iterate(const block_config *c, block_weights *masters);
/* A model's sigma-reparam step: block_sigma_iterate in each of its n_layers blocks, when
 * they use sigma-reparam (else nothing). */
kiln_status block_sigma_step(const block_config *c, block_weights *masters, int n_layers);
/* sigma = u^T W v of one linear, a [1] f32 tensor (for tests and monitoring). */
kiln_tensor *block_sigma(const block_weights *w, block_linear l);

/* ---- forward ---- */

/* Admin's profiling pass (Liu et al. 2020, as the paper's code does it): omega_1 = 1 and,
 * for each residual sublayer i in order, omega_{i+1}^2 = Var[x_i (.) omega_i] + Var[f_i(x_i)]
 * (variances over every element of the batch), each omega set before its sublayer runs. */
typedef struct block_admin_profile {
    float ratio;    /* the omega the next sublayer gets; starts at 1 */
    float *omegas;  /* when not NULL: the omega each sublayer got, in order */
    int count;      /* sublayers profiled so far */
} block_admin_profile;

/* What a forward pass through a stack of blocks carries from one block to the next. */
typedef struct block_pass {
    int64_t pos0;            /* position of x's first row (KV-cache decoding) */
    float dropout;           /* probability in training mode */
    kiln_tensor *scores;     /* RealFormer: the previous layer's raw scores (NULL at first) */
    kiln_tensor *gau_weights;/* GAU relu2: the [T, Tk] causal 1/n table, built once per pass */
    kiln_tensor *key_lengths;    /* i32 [B] or NULL: self-attention ignores keys j >= len[b]
                                    (an encoder's padding; a causal stack needs none) */
    kiln_tensor *memory;         /* cross-attention: the encoder's output [B, S, C] */
    kiln_tensor *memory_lengths; /* i32 [B] or NULL: cross-attention ignores source padding */
    kiln_tensor **cross_kv;      /* when not NULL and cross_kv[layer] is set: that layer's
                                    memory keys and values [B, S, 2C] (block_cross_kv),
                                    computed once for a whole decode */
    kiln_tensor **entropy;   /* when not NULL: entropy[layer] = per-head entropy [H] (f32) */
    kiln_tensor **branches;  /* when not NULL: branches[layer * n + i] = sublayer i's F(x), n =
                                block_config_sublayers (self-attention, cross, MLP in order) */
    kiln_tensor **skips;     /* when not NULL: skips[layer * n + i] = sublayer i's s(x) */
    block_admin_profile *admin; /* when not NULL: profile Admin's omegas (f32 model, no grad) */
} block_pass;

/* A decoder block's cross-attention keys and values [B, S, 2C] of the encoder's output
 * memory [B, S, C]: what block_pass.cross_kv holds while decoding. */
kiln_tensor *block_cross_kv(const block_config *c, const block_weights *w, kiln_tensor *memory);

/* Widths of one layer's cached keys and values: C and C, or GAU's s and e. */
void block_cache_widths(const block_config *c, int64_t *k_width, int64_t *v_width);

/* One block on x [B, T, C]. With a cache (k_store, v_store: [n_positions, B * width]
 * persistent tensors: row t holds position t of every batch row), the new keys and values
 * are written at rows [pos0, pos0 + T) and attention covers every cached row (all rows of
 * a batch step together); else self-attention covers x alone: causal, or every
 * unpadded key when the block is bidirectional. A cross-attention block also attends to
 * pass->memory. */
kiln_tensor *block_forward(const block_config *c, const block_weights *w, int layer,
                           kiln_tensor *x, block_pass *pass, kiln_tensor *k_store,
                           kiln_tensor *v_store);

#endif
