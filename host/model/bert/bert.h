/* BERT's masked language model (Devlin et al. 2019; Hugging Face's BertForMaskedLM), an
 * encoder-only Transformer built from the shared block (model/block.h), so that every
 * stability option applies to it:
 *
 *   x = LN_emb(E_word[ids] + E_pos[0..T) + E_type[0]), dropout
 *   each block: bidirectional self-attention under the key-padding mask, then a 4C GELU MLP
 *               (Post-LN by default, as BERT; --norm pre adds a final LayerNorm)
 *   head:  h = LN_head(gelu(x W_t^T + b_t)); logits = h E_word^T + b_out
 *
 * GELU is kiln's only one, the tanh approximation (Hugging Face's "gelu_new"; BERT's own
 * "gelu" is the erf form). Sequences are [CLS] tokens [SEP], padded to the batch's width;
 * the lengths say where the padding starts, and only the chosen (masked) positions have a
 * target (-1 elsewhere, ignored by the loss).
 *
 * Internally the model keeps the block's layout and names (block_param_specs with prefix
 * "bert.encoder.layer.": Conv1D [in, out] weights, q, k and v fused); its own tensors carry
 * Hugging Face's names and layouts. model/bert/bert_checkpoint.h converts the blocks to Hugging
 * Face's layout at save and back at load. Nothing here prints: failures return NULL or a
 * status with the engine's last error set. */
#ifndef KILN_HOST_MODEL_BERT_H
#define KILN_HOST_MODEL_BERT_H

#include <stdint.h>

#include "kiln/kiln.h"
#include "model/block.h"
#include "model/model_params.h"

/* The checkpoint metadata's model_type (Hugging Face's). */
#define BERT_MODEL_TYPE "bert"
/* The internal name prefix of the blocks' tensors ("bert.encoder.layer.<l>.attn.c_attn.weight"). */
#define BERT_BLOCK_PREFIX "bert.encoder.layer."
/* Token types: BERT's two; kiln uses type 0 only (single sequences). */
#define BERT_TYPE_VOCAB 2

typedef struct bert_config {
    int n_layer, n_head, n_embd;
    int max_len;    /* positions (max_position_embeddings): the longest sequence with [CLS] and [SEP] */
    int vocab_size;
    float ln_eps;   /* 1e-12 in BERT */
    block_options block; /* the user's; zero temperature and GAU width mean their defaults */
} bert_config;

/* Checks sizes, n_head dividing n_embd, max_len >= 3 ([CLS] x [SEP]), the epsilon and the
 * block options (GAU's relu^2 attention is causal: an encoder needs --gau-attn softmax).
 * Fills in the block options' zero defaults. Returns 0, or -1 with a one-line reason. */
int bert_config_check(bert_config *cfg, char *err, size_t errlen);

/* The model's own tensors (layer -1) have these slots; block tensors have the block's. */
enum { BERT_SLOT_WORD, BERT_SLOT_POS, BERT_SLOT_TYPE, BERT_SLOT_EMB_LN_W, BERT_SLOT_EMB_LN_B, BERT_SLOT_LN_F_W,
       BERT_SLOT_LN_F_B, BERT_SLOT_HEAD_W, BERT_SLOT_HEAD_B, BERT_SLOT_HEAD_LN_W, BERT_SLOT_HEAD_LN_B,
       BERT_SLOT_OUT_BIAS };

/* The tensors of a model with this config (embeddings, blocks, the final LayerNorm of
 * Pre-LN, the head, then the buffers). Writes to out when not NULL; returns the count. */
int bert_param_specs(const bert_config *cfg, param_spec *out);

/* The block config of a BERT: bidirectional, GELU, Hugging Face's N(0, 0.02) init,
 * DeepNorm's encoder-only constants. */
block_config bert_block_config(const bert_config *cfg);

typedef struct bert_model {
    kiln_ctx *ctx;
    bert_config cfg;
    kiln_dtype dtype;
    kiln_tensor *word, *pos, *type, *emb_ln_w, *emb_ln_b, *ln_f_w, *ln_f_b; /* ln_f: Pre-LN only */
    kiln_tensor *head_w, *head_b, *head_ln_w, *head_ln_b, *out_bias;
    block_config block;
    block_weights *blocks;  /* what the forward pass reads */
    block_weights *masters; /* the f32 weights */
    model_param *params;
    int n_params, n_buffers;
} bert_model;

bert_model *bert_new(kiln_ctx *ctx, const bert_config *cfg);
void bert_free(bert_model *m);

/* Hugging Face's init: matrices and embeddings N(0, 0.02), biases 0, LayerNorm weights 1
 * (DeepNorm's blocks as block_init_param says), then sigma-reparam's power iteration. */
kiln_status bert_init(bert_model *m, uint64_t seed);
/* Mixed precision, as gpt_set_precision. */
kiln_status bert_set_precision(bert_model *m, kiln_dtype dtype, int keep_masters);
kiln_status bert_sigma_step(bert_model *m);
/* Admin's closed form: every omega sqrt((N + 1) / ln(N + 1) - 1), N = the residual sublayers. */
kiln_status bert_admin_closed_form(bert_model *m);
int64_t bert_param_count(const bert_model *m);
/* Changes the attention temperature from the next forward pass on (--attn-temperature-at). */
void bert_set_attn_temperature(bert_model *m, float temperature);

/* The encoder's output [B, T, C] for ids [B, T] (i32) with lengths (i32 [B], or NULL when no
 * row is padded). */
kiln_tensor *bert_encode(bert_model *m, kiln_tensor *ids, kiln_tensor *lengths, float dropout);
/* The head on hidden states [..., C]: logits [..., V]. */
kiln_tensor *bert_head(bert_model *m, kiln_tensor *hidden);
/* Logits [B, T, V] at every position. */
kiln_tensor *bert_logits(bert_model *m, kiln_tensor *ids, kiln_tensor *lengths, float dropout);

/* A padded batch on the host: rows x width ids, lengths, and targets (-1 where nothing is
 * predicted). */
typedef struct bert_batch {
    int rows, width;
    int32_t *ids, *lengths, *targets;
} bert_batch;
void bert_batch_free(bert_batch *b);

/* The MLM loss of a batch: the mean cross-entropy over the positions with a target. The
 * head runs on those rows only (gathered from the encoder's output). *masked_logits (may be
 * NULL) receives their logits [N, V] in row-major order of the positions, for accuracy.
 * A batch without any target is an error. */
kiln_tensor *bert_batch_loss(bert_model *m, const bert_batch *b, float dropout, kiln_tensor **masked_logits);

/* Training's monitoring (model/metrics.h): the attention entropy of batch b in evaluation
 * mode, per_layer[n_layer] and the lowest head's in *lowest (padded queries count as the
 * rest: the evaluation windows are full but for the last); the gradient norm of each
 * block's parameters (as model_params_layer_grad_norms). */
kiln_status bert_attention_entropy(bert_model *m, const bert_batch *b, double *per_layer, double *lowest);
kiln_status bert_layer_grad_norms(bert_model *m, double unscale, double *out);

#endif
