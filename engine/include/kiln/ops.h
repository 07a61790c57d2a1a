/* The op set. Every op:
 *  - checks shapes and dtypes and returns NULL with a message on a mismatch;
 *  - returns NULL at once, without a new message, when an input is NULL, so a chain of
 *    ops can be checked once at the end;
 *  - allocates its output in the context's arena (freed by kiln_step_reset);
 *  - records itself on the tape when grad is enabled and an input requires grad.
 *
 * Precision: every op takes f32 or f16 floating tensors (mixed-precision training keeps f16
 * activations and gradients). The floating inputs of one call must share a dtype; a mix is
 * KILN_ERR_DTYPE ("add: a is f16 but b is f32; convert one with kiln_cast"). Outputs take
 * the inputs' dtype, except statistics and scalars, which stay f32 whatever the inputs are:
 * the cross-entropy loss, sum, mean, global_norm and attention_entropy. Kernels load f16,
 * compute and accumulate in f32 and round once on store. A gradient has its tensor's dtype.
 * Token ids, lengths and targets are i32. Whether a device can hold f16 at all:
 * kiln_supports_dtype (context.h). */
#ifndef KILN_OPS_H
#define KILN_OPS_H

#include "kiln/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- matmul ----
 * C = op(A) op(B) (+ bias), op = transpose when the flag is set.
 * A: [..., M, K] (or [..., K, M] transposed), B: [..., K, N] (or [..., N, K]).
 * Leading (batch) dims must be equal, or B may be 2-D and is then shared by every batch.
 * bias: [N] or NULL. A, B and bias share a dtype, which C takes: f16 operands give an f16 C
 * (accumulated in f32, rounded once). */
kiln_tensor *kiln_matmul(kiln_tensor *a, kiln_tensor *b, kiln_tensor *bias, int trans_a,
                         int trans_b);

/* ---- elementwise ----
 * out has a's shape. b must have a's shape, or a's trailing dims (it is then broadcast over
 * the leading ones: a bias, a position table), or be a single element of any shape ([1],
 * [], [1, 1]: broadcast over all of a, a learned scalar gain). b's gradient is summed over
 * the broadcast. */
kiln_tensor *kiln_add(kiln_tensor *a, kiln_tensor *b);
kiln_tensor *kiln_sub(kiln_tensor *a, kiln_tensor *b);
kiln_tensor *kiln_mul(kiln_tensor *a, kiln_tensor *b);
/* a / b (IEEE: b == 0 gives inf or NaN, no error). da = dy / b, db = -sum dy * a / b^2. */
kiln_tensor *kiln_div(kiln_tensor *a, kiln_tensor *b);
kiln_tensor *kiln_scale(kiln_tensor *x, float alpha);

/* ---- activations ---- */
typedef enum kiln_act {
    KILN_ACT_GELU = 0,  /* tanh approximation, as GPT-2 */
    KILN_ACT_RELU,
    KILN_ACT_SILU,
    KILN_ACT_RELU2      /* squared ReLU */
} kiln_act;
kiln_tensor *kiln_activation(kiln_tensor *x, kiln_act kind);
kiln_tensor *kiln_gelu(kiln_tensor *x);
kiln_tensor *kiln_relu(kiln_tensor *x);
kiln_tensor *kiln_silu(kiln_tensor *x);
kiln_tensor *kiln_relu2(kiln_tensor *x);

/* ---- embedding ----
 * table: [V, C]; ids: i32 of any shape [...]; out: [..., C]. An id outside [0, V) is an
 * error (KILN_ERR_RANGE). Backward scatter-adds into the table's gradient. */
kiln_tensor *kiln_embedding(kiln_tensor *table, kiln_tensor *ids);

/* ---- normalization (over the last axis) ----
 * layernorm: y = (x - mean) * rstd * weight + bias; weight and bias [C], either may be
 * NULL (then 1 and 0). rmsnorm: y = x * rsqrt(mean(x^2) + eps) * weight. */
kiln_tensor *kiln_layernorm(kiln_tensor *x, kiln_tensor *weight, kiln_tensor *bias, float eps);
kiln_tensor *kiln_rmsnorm(kiln_tensor *x, kiln_tensor *weight, float eps);

/* ---- attention pieces ---- */
typedef struct kiln_softmax_opts {
    float scale;         /* multiplies the scores first (1/sqrt(d)); 0 means 1 */
    float temperature;   /* divides the logits; 0 means 1 */
    int causal;          /* query i sees keys j <= i + (Tk - Tq) */
    kiln_tensor *key_lengths; /* i32 [B] or NULL: keys j >= len[b] are masked */
    kiln_tensor *add;    /* [B, H, Tq, Tk] or NULL: added to the scaled scores (RealFormer) */
} kiln_softmax_opts;
/* scores: [B, H, Tq, Tk]. p = softmax((scale * scores + add) / temperature) over the last
 * axis with masked keys at probability 0; a row with every key masked is all zeros. The
 * masks are computed inside the kernel, never materialized. opts may be NULL. */
kiln_tensor *kiln_softmax(kiln_tensor *scores, const kiln_softmax_opts *opts);

/* Fused attention (FlashAttention-2): the probabilities are never materialized, so memory
 * grows linearly in the context. */
typedef struct kiln_attention_opts {
    int n_head;                /* H query heads (required) */
    int n_kv_head;             /* KVH key/value heads, H % KVH == 0; 0 means H */
    float scale;               /* multiplies q.k first; 0 means 1/sqrt(head_dim) */
    float temperature;         /* divides the logits; 0 means 1 */
    int causal;                /* query i sees keys j <= i + (Tk - Tq) */
    kiln_tensor *key_lengths;  /* i32 [B] or NULL: keys j >= len[b] are masked */
    float dropout;             /* dropout on the probabilities in training mode; 0: none */
} kiln_attention_opts;
/* q [B, Tq, H*hd], k and v [B, Tk, KVH*hd] -> y [B, Tq, H*hd] (f32 or f16, one dtype; hd up
 * to 256). Equal in value and gradient to the unfused composition: split_heads, q k^T,
 * kiln_softmax(scale, temperature, causal, key_lengths), kiln_dropout, probs @ v,
 * merge_heads; query head h reads kv head h / (H / KVH), with no copies of k or v. Dropout
 * draws the mask kiln_dropout would draw on the [B, H, Tq, Tk] probabilities (one stream,
 * taken in training mode exactly when kiln_dropout takes one). A query whose keys are all
 * masked gives y = 0 and zero gradients. The backward keeps only y and one f32 log-sum-exp
 * per query row and head. */
kiln_tensor *kiln_attention(kiln_tensor *q, kiln_tensor *k, kiln_tensor *v, const kiln_attention_opts *opts);

/* p: [B, H, Tq, Tk] probabilities. Returns [H] in f32: -sum_k p log p, averaged over the
 * batch and the queries (0 log 0 = 0). */
kiln_tensor *kiln_attention_entropy(kiln_tensor *p);

/* ---- rotary position embeddings ---- */
typedef enum kiln_rope_layout {
    KILN_ROPE_ADJACENT = 0, /* pairs (2i, 2i+1): llama.cpp's "norm" rope, architecture llama */
    KILN_ROPE_HALF = 1      /* pairs (i, i + D/2): HF's rotate_half, llama.cpp's "neox" (qwen2, qwen3) */
} kiln_rope_layout;
typedef struct kiln_rope_opts {
    float base;                /* theta base (10000, 500000, 1000000); 0 means 10000 */
    kiln_rope_layout layout;
    int64_t pos0;              /* position of x's row t = 0 (KV-cache decoding) */
    kiln_tensor *freq_factors; /* f32 [D/2] or NULL: llama.cpp's rope_freqs; the angle of pair i
                                  at position p is p * base^(-2i/D) / freq_factors[i] */
} kiln_rope_opts;
/* x: [B, T, H, D] (D even), f32 or f16; position of row t is pos0 + t. Rotates every head's
 * pairs by their angles; differentiable in x (the gradient rotates back), not in the factors.
 * Pair i of a head, (a, b) = (x[2i], x[2i+1]) or (x[i], x[i + D/2]) by layout, becomes
 * (a cos - b sin, a sin + b cos) at angle p * base^(-2i/D) / freq_factors[i].
 * 0 <= pos0 and pos0 + T <= 2^24 (positions exact in f32). The factors are not read back
 * to be checked: llama.cpp's are >= 1, and a zero one gives NaN. opts may be NULL (base 10000,
 * KILN_ROPE_ADJACENT, pos0 0, no factors). The angle is computed in f32 on devices, as
 * PyTorch and llama.cpp compute it (the CPU reference takes it in double). */
kiln_tensor *kiln_rope(kiln_tensor *x, const kiln_rope_opts *opts);

/* Inverted dropout with probability `p`, from the counter-based RNG keyed by (seed, stream,
 * element index): the same mask on every backend. The context draws a fresh stream per call.
 * Identity when p == 0 or the context is not training. */
kiln_tensor *kiln_dropout(kiln_tensor *x, float p);

/* x: [B, T, H*D] -> [B, H, T, D], and back. */
kiln_tensor *kiln_split_heads(kiln_tensor *x, int heads);
kiln_tensor *kiln_merge_heads(kiln_tensor *x);

/* ---- losses and reductions ----
 * logits: [..., V]; targets: i32 [...]. Mean over the rows whose target != ignore_index of
 * (1 - s) * (-log p[target]) + s * mean_v(-log p[v]), s = label_smoothing. Returns an f32
 * scalar (also from f16 logits).
 * A target outside [0, V) that is not ignore_index is an error. */
kiln_tensor *kiln_cross_entropy(kiln_tensor *logits, kiln_tensor *targets, float label_smoothing,
                                int ignore_index);
kiln_tensor *kiln_sum(kiln_tensor *x);   /* f32 scalar */
kiln_tensor *kiln_mean(kiln_tensor *x);  /* f32 scalar */
/* sqrt(sum over every tensor of sum x^2): an f32 scalar. Differentiable. */
kiln_tensor *kiln_global_norm(kiln_tensor *const *xs, int count);

/* ---- shape ops (copies, not views) ---- */
/* Concatenates along `axis` (negative counts from the end). */
kiln_tensor *kiln_concat(kiln_tensor *const *xs, int count, int axis);
/* Elements [start, start+len) along `axis`. */
kiln_tensor *kiln_slice(kiln_tensor *x, int axis, int64_t start, int64_t len);
/* A contiguous copy with the same shape, or cast to `dtype` (f32 <-> f16). Differentiable
 * both ways: the gradient is cast back to x's dtype. */
kiln_tensor *kiln_cast(kiln_tensor *x, kiln_dtype dtype);

/* ---- constants and checks (not differentiable) ----
 * The Transformer's sinusoidal position table [T, C]: pe[t, 2i] = sin(t / 10000^(2i/C)),
 * pe[t, 2i+1] = cos(t / 10000^(2i/C)). f32 (kiln_cast it for an f16 model). */
kiln_tensor *kiln_sinusoid_table(kiln_ctx *ctx, int64_t positions, int64_t channels);
/* Accumulates into `flag` (an i32 scalar, persistent): sets it to 1 when x holds an inf or
 * NaN, leaves it otherwise. Device-side: nothing is read back. */
kiln_status kiln_check_finite(kiln_tensor *x, kiln_tensor *flag);

#ifdef __cplusplus
}
#endif
#endif
