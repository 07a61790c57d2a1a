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
 * and the Llama family's choices (LLaMA, Qwen2, Qwen3): RMSNorm in place of LayerNorm,
 * rotary positions on q and k, a SwiGLU MLP down(silu(gate) * up), biases on every linear,
 * on q/k/v only (Qwen2) or on none, Qwen3's RMSNorm of each head of q and k, grouped-query
 * attention (n_kv_head heads of keys and values shared by n_head / n_kv_head query heads
 * each, never repeated in memory) and a head width that need not be n_embd / n_head.
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
typedef enum block_norm_type {
    BLOCK_NORM_TYPE_LAYERNORM,
    BLOCK_NORM_TYPE_RMSNORM,
    BLOCK_NORM_TYPE_COUNT
} block_norm_type;
typedef enum block_mlp { BLOCK_MLP_GELU, BLOCK_MLP_SWIGLU, BLOCK_MLP_COUNT } block_mlp;
typedef enum block_bias { BLOCK_BIAS_ALL, BLOCK_BIAS_QKV, BLOCK_BIAS_NONE, BLOCK_BIAS_COUNT } block_bias;

/* The names users type and checkpoints store, indexed by the enums above. */
extern const char *const block_norm_names[BLOCK_NORM_COUNT];         /* pre post none */
extern const char *const block_residual_names[BLOCK_RESIDUAL_COUNT]; /* plain rezero admin deepnorm */
extern const char *const block_layer_names[BLOCK_LAYER_COUNT];       /* transformer gau */
extern const char *const block_gau_attn_names[BLOCK_GAU_ATTN_COUNT]; /* relu2 softmax */
extern const char *const block_norm_type_names[BLOCK_NORM_TYPE_COUNT]; /* layernorm rmsnorm */
extern const char *const block_mlp_names[BLOCK_MLP_COUNT];             /* gelu swiglu */
extern const char *const block_bias_names[BLOCK_BIAS_COUNT];           /* all qkv none */
/* The rotary layouts by kiln_rope_layout: adjacent (pairs 2i, 2i+1), half (i, i + D/2). */
extern const char *const block_rope_layout_names[2];

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
    /* the Llama family's (all zero: GPT-2's) */
    block_norm_type norm_type; /* every norm of the block (and the model's final one) */
    block_mlp mlp;             /* GELU: c_proj(gelu(c_fc x)); SwiGLU: c_proj(silu(gate) * up) */
    block_bias bias;           /* which linears have a bias */
    int qk_norm;               /* Qwen3: RMSNorm over each head's channels of q and k, before the rope */
    int rope;                  /* rotary positions on q and k (kiln_rope) */
    float rope_base;           /* theta; 0 means 10000 */
    kiln_rope_layout rope_layout; /* stored whenever rope is on; half (HF's rotate_half, every
                                     family kiln reads) when a file says rope without it */
} block_options;

/* GPT-2's block: pre, plain, transformer, no sigma-reparam, no RealFormer, T = 1, s = 128,
 * LayerNorm, GELU, every bias, no rope (whose base would be 10000). */
block_options block_options_default(void);
/* Gives the options that have no meaningful zero (the attention temperature, GAU's s, the
 * rope base) their defaults where they are zero, as a config zero-initialized by a caller
 * leaves them. */
void block_options_fill_defaults(block_options *o);

/* Refuses combinations that make no sense, with one line saying why: Admin and DeepNorm
 * with any norm placement but post, RealFormer with GAU layers (one head of width s: the
 * scores of a layer cannot pass to a layer with a different head count), a temperature
 * that is not a positive number, a GAU width out of range, rotary positions with GAU layers
 * or RealFormer (their scores are not the rotated q k^T), a rope base that is not above 1.
 * Returns 0 or -1 with err. */
int block_options_check(const block_options *o, char *err, size_t errlen);

/* The options as checkpoint metadata: put(ctx, key, value) for each ("kiln.norm" = "post",
 * ...; the Llama family's "kiln.norm_type", "kiln.mlp", "kiln.bias", "kiln.qk_norm",
 * "kiln.rope", "kiln.rope_base", "kiln.rope_layout" only where they differ from GPT-2's, so a
 * GPT-2 checkpoint stays byte for byte what it was); from_meta reads them back with get(ctx, key) (NULL when absent: that option's
 * default) and checks them. Returns 0 or -1 with a one-line message. */
typedef void (*block_meta_put)(void *ctx, const char *key, const char *value);
typedef const char *(*block_meta_get)(void *ctx, const char *key);
void block_options_to_meta(const block_options *o, block_meta_put put, void *ctx);
int block_options_from_meta(block_options *o, block_meta_get get, void *ctx, char *err, size_t errlen);

/* One block as built: the options plus what the model decides. */
typedef struct block_config {
    int n_embd, n_head;
    /* 0 means GPT-2's: n_head key/value heads, n_embd / n_head wide, an MLP 4 n_embd wide
       (SwiGLU: block_ffn's default); block_kv_heads, block_head_dim, block_ffn resolve them */
    int n_kv_head, head_dim, n_ffn;
    float ln_eps; /* every norm's epsilon (Qwen3's q/k norms too) */
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
    int attention_fused;  /* run-time, never in a checkpoint: attention through kiln_attention (the fused op) */
} block_config;

/* DeepNorm's constants (Wang et al. 2022): for an encoder-only or decoder-only stack of N
 * layers (pass M = 0) alpha = (2N)^(1/4), beta = (8N)^(-1/4); for an encoder-decoder with N
 * encoder and M decoder layers, the encoder's alpha = 0.81 (N^4 M)^(1/16),
 * beta = 0.87 (N^4 M)^(-1/16) and the decoder's alpha = (3M)^(1/4), beta = (12M)^(-1/4). */
void block_deepnorm_constants(int n_layers, int m_decoder_layers, int is_decoder, float *alpha,
                              float *beta);

/* Admin's closed-form omega for N residual sublayers: sqrt((N + 1) / ln(N + 1) - 1). */
float block_admin_closed_omega(int n_sublayers);

/* The sizes a config leaves at 0, resolved: key/value heads (n_head), the head width
 * (n_embd / n_head), the MLP's hidden width F (GELU: 4 n_embd; SwiGLU: 8 n_embd / 3 rounded
 * up to a multiple of 32, the weights of GELU's 4x MLP in three matrices as LLaMA has it). */
int block_kv_heads(const block_config *c);
int block_head_dim(const block_config *c);
int block_ffn(const block_config *c);

/* Residual sublayers per block of a causal stack: 2 (attention, MLP) or 1 (GAU). */
int block_sublayers(const block_options *o);
/* Residual sublayers of a block as configured: block_sublayers, plus cross-attention's. */
int block_config_sublayers(const block_config *c);

/* ---- parameters ---- */

/* Every tensor a block can own. Which exist depends on the options (block_param_specs). */
typedef enum block_slot {
    BLOCK_LN1_W, BLOCK_LN1_B,
    BLOCK_QKV_W, BLOCK_QKV_B,             /* attn.c_attn: [C, (H + 2 KVH) hd] (q, k, v side by side;
                                             [C, 3C] for GPT-2) */
    BLOCK_ATTN_PROJ_W, BLOCK_ATTN_PROJ_B, /* attn.c_proj: [H hd, C] */
    BLOCK_LN2_W, BLOCK_LN2_B,
    BLOCK_FC_W, BLOCK_FC_B,               /* mlp.c_fc: [C, F] (GELU), [C, 2F] (SwiGLU: gate, up) */
    BLOCK_MLP_PROJ_W, BLOCK_MLP_PROJ_B,   /* mlp.c_proj: [F, C] */
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
    BLOCK_Q_NORM_W, BLOCK_K_NORM_W,       /* attn.q_norm, attn.k_norm: [hd] (--qk-norm) */
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

/* The most parts one linear is held in (the Llama family's q, k and v). */
#define BLOCK_QPARTS 3

/* A block's tensors by slot (NULL where the options make none). */
typedef struct block_weights {
    kiln_tensor *w[BLOCK_SLOT_COUNT];
    /* a linear's weight quantized (kiln/quant.h: [out][in] blocks), used instead of its
       w[] (then NULL) by a model read from a quantized GGUF (model/gpt/gpt_gguf.h); its bias stays
       in w[]. NULL: the f32/f16 weight. */
    kiln_qmatrix *q[BLOCK_SLOT_COUNT];
    /* a linear stacked from pieces of different block formats (a Q4_K_M file's attn_q and
       attn_k in Q4_K beside attn_v in Q6_K): each run of pieces of one format in its own
       matrix, their outputs side by side in this order (NULL after the last), so no piece is
       dequantized; q[] and w[] are then NULL. */
    kiln_qmatrix *qpart[BLOCK_SLOT_COUNT][BLOCK_QPARTS];
    /* the LoRA adapters attached to this block (model/lora.h), a list; NULL: none */
    struct lora_block *lora;
} block_weights;

/* The LoRA hook of a linear (defined in model/lora.c): y holds the columns
 * [col0, col0 + y's width) of linear l's output for input x; returns y plus the delta of each
 * adapter in lb whose target covers exactly those columns (lb NULL: y itself). The forward
 * calls it where each target's output exists as a tensor of its own: the whole output in
 * linear(), q, k and v where attention slices them, gate and up where SwiGLU does, so no
 * output is cut apart and joined again for an adapter. NULL on an engine error. */
kiln_tensor *lora_block_apply(const struct lora_block *lb, block_linear l, int64_t col0, kiln_tensor *x,
                              kiln_tensor *y);

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
    kiln_tensor *rope_freqs;     /* f32 [hd / 2] or NULL: the rope's frequency factors (the
                                    model's rope.freqs: Llama 3's rope scaling) */
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

/* The block's norm of x over its last axis: LayerNorm (weight, bias) or RMSNorm (weight;
 * bias unused), as o->norm_type says; the model's final norm uses it too. */
kiln_tensor *block_norm_apply(const block_options *o, kiln_tensor *x, kiln_tensor *weight, kiln_tensor *bias,
                              float eps);

/* Widths of one layer's cached keys and values: KVH hd and KVH hd (C and C for GPT-2), or
 * GAU's s and e. */
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
