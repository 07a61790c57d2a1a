/* GPT with GPT-2's architecture, built from kiln ops:
 *
 *   x = wte[ids] + wpe[positions]                       (learned positions), dropout
 *   for each block:  x = x + dropout(attn(ln_1(x)))      (Pre-LN)
 *                    x = x + dropout(mlp(ln_2(x)))       (mlp: c_fc, GELU, c_proj; 4x wide)
 *   logits = ln_f(x) wte^T                               (output tied to the input embedding)
 *
 * Weights use Hugging Face GPT-2's names, shapes and Conv1D layout (y = x W + b with W
 * [in, out]), so a checkpoint maps one to one onto HF's GPT2Model. Nothing here knows which
 * backend runs it, and nothing prints: a failing call returns NULL or a status with the
 * engine's last error set (kiln_error_message()), or -1 with a message in `err`. */
#ifndef KILN_HOST_MODEL_GPT_H
#define KILN_HOST_MODEL_GPT_H

#include "kiln/kiln.h"

typedef struct gpt_config {
    int n_layer, n_head, n_embd, n_positions, vocab_size;
    float ln_eps; /* layer_norm_epsilon, 1e-5 as GPT-2 */
} gpt_config;

/* GPT-2's defaults for what a checkpoint may leave out. */
#define GPT_DEFAULT_LN_EPS 1e-5f
/* Bytes are the tokens. */
#define GPT_BYTE_VOCAB 256

/* Checks that a config describes a buildable model (positive sizes within sane limits,
 * n_head dividing n_embd). Returns 0, or -1 with a one-line reason in err. */
int gpt_config_check(const gpt_config *cfg, char *err, size_t errlen);

typedef struct gpt_block {
    kiln_tensor *ln_1_w, *ln_1_b;
    kiln_tensor *attn_w, *attn_b;           /* c_attn: [C, 3C], [3C] (q, k, v side by side) */
    kiln_tensor *attn_proj_w, *attn_proj_b; /* c_proj: [C, C], [C] */
    kiln_tensor *ln_2_w, *ln_2_b;
    kiln_tensor *fc_w, *fc_b;               /* mlp.c_fc: [C, 4C], [4C] */
    kiln_tensor *mlp_proj_w, *mlp_proj_b;   /* mlp.c_proj: [4C, C], [C] */
} gpt_block;

/* A parameter's checkpoint name, shape and role. */
typedef struct gpt_param_spec {
    char name[48];     /* "h.3.attn.c_attn.weight" */
    int ndim;
    int64_t shape[2];
    int decay;         /* weight decay applies (2-D weights: matrices and embeddings) */
    int residual_proj; /* attn.c_proj / mlp.c_proj weight: init scaled by 1/sqrt(2 n_layer) */
} gpt_param_spec;

/* The parameters of a model with this config, in checkpoint order (HF's state_dict order:
 * wte, wpe, the blocks, ln_f). Writes them to out when it is not NULL (room for
 * gpt_param_specs(cfg, NULL) entries) and returns their number. */
int gpt_param_specs(const gpt_config *cfg, gpt_param_spec *out);

/* One parameter: its spec and its tensor. */
typedef struct gpt_param {
    gpt_param_spec spec;
    kiln_tensor *t;    /* the weight: f32 (the master in mixed-precision training) */
    kiln_tensor *half; /* its f16 working copy in mixed-precision training, else NULL */
} gpt_param;

typedef struct gpt_model {
    kiln_ctx *ctx;
    gpt_config cfg;
    kiln_dtype dtype; /* of the weights the forward pass reads, and of its activations */
    /* the weights the forward pass reads: the f16 copies in mixed-precision training */
    kiln_tensor *wte, *wpe, *ln_f_w, *ln_f_b;
    gpt_block *blocks;
    gpt_param *params; /* every weight, in checkpoint order */
    int n_params;
} gpt_model;

/* Allocates the weights (zero-filled, requiring grad) on ctx. NULL on error (engine
 * message set, or "out of memory"). The config must pass gpt_config_check. */
gpt_model *gpt_new(kiln_ctx *ctx, const gpt_config *cfg);
void gpt_free(gpt_model *m);

/* GPT-2 / nanoGPT initialisation from the counter RNG: every weight normal(0, 0.02), the
 * two residual projections of each block normal(0, 0.02 / sqrt(2 n_layer)), biases 0,
 * LayerNorm weights 1. Tensor i draws from its own stream, so the result depends only on
 * the seed. */
kiln_status gpt_init(gpt_model *m, uint64_t seed);

/* Precision (docs/design.md "Precision"). With KILN_F16 the forward pass reads f16 weights and
 * computes f16 activations (statistics and the loss stay f32):
 *   keep_masters = 1 (training): each f32 weight stays the master that the optimizer
 *     updates and checkpoints hold; an f16 working copy (params[i].half, requiring grad:
 *     backward's gradients land there) is allocated and filled from it;
 *   keep_masters = 0 (eval, decode): the f32 weights are replaced by f16 ones, halving
 *     their memory.
 * KILN_F32 is a no-op on an f32 model. Fails with KILN_ERR_UNSUPPORTED (engine message) on
 * a device that cannot store f16, leaving the model in f32, and with KILN_ERR_ARGUMENT (the
 * engine's last error set, as for every failure here) for any change but f32 -> f16. */
kiln_status gpt_set_precision(gpt_model *m, kiln_dtype dtype, int keep_masters);

/* The tensor that gradients reach for parameter i: the f16 copy in mixed-precision
 * training, the weight itself otherwise. */
kiln_tensor *gpt_grad_leaf(const gpt_model *m, int i);

/* Total number of weights (elements). */
int64_t gpt_param_count(const gpt_model *m);

/* The parameter with this checkpoint name, or NULL. */
gpt_param *gpt_find_param(gpt_model *m, const char *name);

/* Logits [B, T, V] for token ids [B, T] (i32, values in [0, vocab)), T <= n_positions.
 * `dropout` is the probability used in training mode (kiln_set_training); pass 0 for
 * none. Returns NULL on error, with the engine's last error set (kiln_error_message()). */
kiln_tensor *gpt_forward(gpt_model *m, kiln_tensor *ids, float dropout);

/* Mean cross-entropy of gpt_forward's logits against targets [B, T] (a scalar). When
 * logits_out is not NULL it receives the logits. */
kiln_tensor *gpt_loss(gpt_model *m, kiln_tensor *ids, kiln_tensor *targets, float dropout,
                      kiln_tensor **logits_out);

/* ---- decoding with a KV cache ----
 * The keys and values of every layer for the positions decoded so far, kept on the device
 * as persistent [n_positions, C] tensors, so each new token costs one position. */
typedef struct gpt_kv_cache {
    kiln_tensor **k, **v; /* per layer */
    int n_layer;
    int len;              /* positions filled */
} gpt_kv_cache;

gpt_kv_cache *gpt_kv_new(gpt_model *m);
void gpt_kv_free(gpt_kv_cache *c);

/* Runs `n` new tokens at positions [cache->len, cache->len + n) (which must stay within
 * n_positions), appends their keys and values to the cache, and returns the logits of the
 * last of them as a [1, 1, V] step tensor. Grad and training should be off. */
kiln_tensor *gpt_forward_cached(gpt_model *m, gpt_kv_cache *cache, const int32_t *ids, int n);

#endif
