/* GPT with GPT-2's architecture, built from kiln ops and the shared block (model/block.h):
 *
 *   x = wte[ids] + wpe[positions]                       (learned positions), dropout
 *   for each block:  x = x + dropout(attn(ln_1(x)))      (Pre-LN, GPT-2's default)
 *                    x = x + dropout(mlp(ln_2(x)))       (mlp: c_fc, GELU, c_proj; 4x wide)
 *   logits = ln_f(x) wte^T                               (output tied to the input embedding)
 *
 * The block options (norm placement, residual scheme, GAU, RealFormer, sigma-reparam,
 * temperature) change the blocks; ln_f exists under Pre-LN only (Post-LN's blocks end
 * normalized, and --norm none has no LayerNorm at all).
 *
 * Weights use Hugging Face GPT-2's names, shapes and Conv1D layout (y = x W + b with W
 * [in, out]), so a checkpoint maps one to one onto HF's GPT2Model. Nothing here knows which
 * backend runs it, and nothing prints: a failing call returns NULL or a status with the
 * engine's last error set (kiln_error_message()), or -1 with a message in `err`. */
#ifndef KILN_HOST_MODEL_GPT_H
#define KILN_HOST_MODEL_GPT_H

#include "kiln/kiln.h"
#include "model/block.h"
#include "model/model_params.h"

/* Where the model's positions come from: GPT-2's learned table wpe, or rotary embeddings
 * of q and k in every block (block_options.rope; no wpe). */
typedef enum gpt_position { GPT_POSITION_LEARNED, GPT_POSITION_ROPE, GPT_POSITION_COUNT } gpt_position;
extern const char *const gpt_position_names[GPT_POSITION_COUNT]; /* learned rope */

typedef struct gpt_config {
    int n_layer, n_head, n_embd, n_positions, vocab_size;
    float ln_eps; /* layer_norm_epsilon, 1e-5 as GPT-2; every norm's epsilon (--norm-eps) */
    /* the blocks' options; all-zero is GPT-2's block (a temperature of 0 and a GAU width of
     * 0 mean 1 and 128: gpt_config_check and gpt_new fill them in) */
    block_options block;
    /* The Llama family's sizes and choices; all zero is GPT-2's model. */
    int n_kv_head;  /* key/value heads (grouped-query attention); 0: n_head */
    int head_dim;   /* each head's width; 0: n_embd / n_head */
    int n_ffn;      /* the MLP's hidden width; 0: 4 n_embd (GELU), block_ffn's default (SwiGLU) */
    int untied;     /* an output head lm_head.weight [V, C] of its own, not wte */
    gpt_position position; /* gpt_config_check makes block.rope say the same */
    int rope_freqs; /* a buffer rope.freqs [head_dim / 2]: the rope's frequency factors (Llama 3's
                       rope scaling: gpt_rope_llama3_freqs, or a GGUF's rope_freqs tensor) */
} gpt_config;

/* Llama 3's rope scaling (config.json's rope_scaling with rope_type "llama3"). */
typedef struct gpt_rope_llama3 {
    double factor, low_freq_factor, high_freq_factor, original_max_position_embeddings;
} gpt_rope_llama3;

/* The frequency factors of rope.freqs for head width head_dim and base theta, as Hugging
 * Face's _compute_llama3_parameters scales the inverse frequencies (kiln_rope divides each
 * pair's angle by its factor): factors[i] = 1 for wavelengths below
 * original_max / high_freq_factor, `factor` above original_max / low_freq_factor, and
 * 1 / ((1 - s) / factor + s) between, s = (original_max / wavelength - low) / (high - low).
 * Returns 0, or -1 with a one-line reason in err (factors not positive, high <= low). */
int gpt_rope_llama3_freqs(const gpt_rope_llama3 *s, int head_dim, double base, float *factors, char *err,
                          size_t errlen);

/* The config's metadata beyond GPT-2's five sizes and epsilon: "n_kv_head", "head_dim",
 * "n_ffn", "untied", "position", "rope_freqs", each written only where it is not GPT-2's
 * (put as block_options_to_meta's), read back by from_meta (absent: GPT-2's value; a value
 * that is not a number of the key's range is an error, one line in err). */
void gpt_config_to_meta(const gpt_config *cfg, block_meta_put put, void *ctx);
int gpt_config_from_meta(gpt_config *cfg, block_meta_get get, void *ctx, char *err, size_t errlen);

/* GPT-2's defaults for what a checkpoint may leave out. */
#define GPT_DEFAULT_LN_EPS 1e-5f
/* Bytes are the tokens. */
#define GPT_BYTE_VOCAB 256

/* Checks that a config describes a buildable model (positive sizes within sane limits,
 * n_head dividing n_embd unless head_dim is given, n_kv_head dividing n_head, an even head
 * width for the rope, block options that make sense together). Fills in the block options'
 * zero defaults and makes block.rope and position agree (either one set means rope).
 * Returns 0, or -1 with a one-line reason in err. */
int gpt_config_check(gpt_config *cfg, char *err, size_t errlen);

/* The config every block of this model is built with (DeepNorm's constants for a
 * decoder-only stack of n_layer blocks, GPT-2's residual-projection init std). */
block_config gpt_block_config(const gpt_config *cfg);

/* A tensor's checkpoint name, shape and role (model/block.h). The model's own tensors have
 * layer -1 and these slots: */
typedef param_spec gpt_param_spec;
enum { GPT_SLOT_WTE, GPT_SLOT_WPE, GPT_SLOT_LN_F_W, GPT_SLOT_LN_F_B, GPT_SLOT_LM_HEAD, GPT_SLOT_ROPE_FREQS };

/* The tensors of a model with this config, in checkpoint order: the trained ones in HF's
 * state_dict order (wte, wpe (learned positions only), the blocks, ln_f (its bias with
 * LayerNorm only), lm_head (untied only)), then the buffers (sigma-reparam's u and v, then
 * rope.freqs).
 * Writes them to out when it is not NULL (room for gpt_param_specs(cfg, NULL) entries) and
 * returns their number. */
int gpt_param_specs(const gpt_config *cfg, gpt_param_spec *out);

/* One parameter: its spec, its tensor and its f16 copy (model/model_params.h). */
typedef model_param gpt_param;

/* What a model read from a quantized GGUF (model/gpt/gpt_gguf.h) keeps quantized: the blocks'
 * matrices (block_weights.q, owned here), the output head (logits = ln_f(x) head^T) and the
 * token embedding, whose blocks stay on the host: a step's lookup dequantizes the rows of its
 * tokens only (gpt_forward.c). */
typedef struct gpt_quantized {
    kiln_qmatrix *head;
    unsigned char *embd; /* token_embd's [vocab][n_embd] blocks */
    kiln_qformat embd_format;
    size_t embd_row_bytes;
} gpt_quantized;

typedef struct gpt_model {
    kiln_ctx *ctx;
    gpt_config cfg;
    kiln_dtype dtype; /* of the weights the forward pass reads, and of its activations */
    /* the weights the forward pass reads: the f16 copies in mixed-precision training */
    kiln_tensor *wte, *wpe, *ln_f_w, *ln_f_b; /* ln_f: NULL unless Pre-LN; wpe, ln_f_b: NULL without */
    kiln_tensor *lm_head;    /* untied: [V, C]; NULL when the head is wte */
    kiln_tensor *rope_freqs; /* f32 [head_dim / 2] buffer, or NULL */
    block_config block;     /* every block's config */
    block_weights *blocks;  /* per block: the weights the forward pass reads */
    block_weights *masters; /* per block: the f32 weights (sigma-reparam iterates on them) */
    /* every tensor in checkpoint order: n_params trained ones, then n_buffers buffers
     * (f32 whatever the precision, never given to the optimizer) */
    gpt_param *params;
    int n_params, n_buffers;
    /* NULL but for a model read from a quantized GGUF; its quantized weights' f32 tensors
       (params[i].t, wte, blocks[l].w[...]) are then NULL */
    gpt_quantized *quant;
} gpt_model;

/* Allocates the weights (zero-filled, requiring grad) on ctx. NULL on error (engine
 * message set, or "out of memory"). The config must pass gpt_config_check. */
gpt_model *gpt_new(kiln_ctx *ctx, const gpt_config *cfg);
/* The same without the f32 tensors of the weights where absent[i] is set (i in
 * gpt_param_specs order): a quantized model's reader fills their blocks instead. */
gpt_model *gpt_new_except(kiln_ctx *ctx, const gpt_config *cfg, const unsigned char *absent);
/* The same with the weights in dtype from the start: KILN_F16 is the model gpt_set_precision(m,
 * KILN_F16, 0) leaves (eval, decode), made without f32 weights, for a reader that converts
 * each weight at load. */
gpt_model *gpt_new_typed(kiln_ctx *ctx, const gpt_config *cfg, const unsigned char *absent, kiln_dtype dtype);
void gpt_free(gpt_model *m);

/* GPT-2 / nanoGPT initialisation from the counter RNG: every weight normal(0, 0.02) (lm_head
 * too), the two residual projections of each block normal(0, 0.02 / sqrt(2 n_layer)),
 * biases 0, norm weights 1, rope.freqs 1 (no scaling until a loader sets it); the block options' own init where they have one (block_init_param,
 * block_sigma_init). Tensor i draws from its own stream, so the result depends only on the
 * seed. Admin's omegas start at 1: gpt_admin_profile or gpt_admin_closed_form set them. */
kiln_status gpt_init(gpt_model *m, uint64_t seed);

/* Admin's omegas from a profiling forward pass over token ids [B, T] (block.h), on an f32
 * model. When omegas is not NULL it receives each sublayer's omega, in order
 * (n_layer * block_sublayers entries). */
kiln_status gpt_admin_profile(gpt_model *m, kiln_tensor *ids, float *omegas);
/* Admin's closed form: every omega sqrt((N + 1) / ln(N + 1) - 1), N residual sublayers. */
kiln_status gpt_admin_closed_form(gpt_model *m);

/* One sigma-reparam power-iteration step on every linear (a no-op without sigma-reparam):
 * the trainer runs it once per optimizer step, before the forward passes. */
kiln_status gpt_sigma_step(gpt_model *m);

/* Changes the attention temperature of every block (a schedule in training). */
void gpt_set_attn_temperature(gpt_model *m, float temperature);

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

/* Total number of trained weights (elements; buffers not counted). */
int64_t gpt_param_count(const gpt_model *m);

/* The tensor (weight or buffer) with this checkpoint name, or NULL. */
gpt_param *gpt_find_param(gpt_model *m, const char *name);

/* Logits [B, T, V] for token ids [B, T] (i32, values in [0, vocab)), T <= n_positions.
 * `dropout` is the probability used in training mode (kiln_set_training); pass 0 for
 * none. Returns NULL on error, with the engine's last error set (kiln_error_message()). */
kiln_tensor *gpt_forward(gpt_model *m, kiln_tensor *ids, float dropout);

/* Per-layer attention entropy on token ids [B, T] in evaluation mode: per_layer[l] is the
 * mean over heads and queries of -sum p log p (NaN for a layer without softmax attention:
 * GAU with relu2), *lowest the lowest head's over every layer (NaN when none). */
kiln_status gpt_attention_entropy(gpt_model *m, kiln_tensor *ids, double *per_layer, double *lowest);

/* The global norm of each block's parameter gradients as they stand (after backward),
 * divided by `unscale` (the loss scale in mixed precision, else 1): out[n_layer]. */
kiln_status gpt_layer_grad_norms(gpt_model *m, double unscale, double *out);

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
