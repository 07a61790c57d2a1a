/* The encoder-decoder Transformer of Vaswani et al. (2017), built from the shared block
 * (model/block.h), so that every stability option applies to it:
 *
 *   encoder:  x = E_src[src] * sqrt(C) + PE[0..S), dropout
 *             each block: bidirectional self-attention under the source padding mask, MLP
 *   decoder:  y = E_tgt[tgt_in] * sqrt(C) + PE[0..T), dropout
 *             each block: causal self-attention, cross-attention to the encoder's output
 *             under the source padding mask, MLP
 *   logits = y E_tgt^T                   (the output projection tied to the target embedding)
 *
 * PE is the sinusoidal table (kiln_sinusoid_table); the MLP is 4C wide with ReLU, as in the
 * paper. Under Pre-LN each stack ends with its own LayerNorm (encoder.ln_f, decoder.ln_f);
 * Post-LN, the paper's placement, needs none. DeepNorm takes its encoder-decoder constants.
 * A shared vocabulary (one embedding, "embed.weight") serves source and target; else
 * "src_embed.weight" and "tgt_embed.weight". Blocks are named "encoder.h.<l>." and
 * "decoder.h.<l>." plus the block's own names (block_param_specs).
 *
 * Sequences: the source is its tokens then EOS; the decoder reads BOS then the target's
 * tokens and predicts the target's tokens then EOS. Rows of a batch are padded to the
 * longest; the lengths say where the padding starts, and targets at padded positions are
 * -1 (ignored by the loss). Nothing here prints: failures return NULL or a status with the
 * engine's last error set. */
#ifndef KILN_HOST_MODEL_SEQ2SEQ_H
#define KILN_HOST_MODEL_SEQ2SEQ_H

#include "kiln/kiln.h"
#include "model/block.h"
#include "model/model_params.h"

/* The checkpoint metadata's model_type of an encoder-decoder. */
#define SEQ2SEQ_MODEL_TYPE "kiln-seq2seq"

typedef struct seq2seq_config {
    int enc_layers, dec_layers, n_head, n_embd;
    int max_len;          /* positions: the longest source or decoder sequence (with EOS/BOS) */
    int src_vocab, tgt_vocab;
    int shared_vocab;     /* one embedding for both sides (src_vocab == tgt_vocab) */
    float ln_eps;
    block_options block;  /* the user's; zero temperature and GAU width mean their defaults */
} seq2seq_config;

/* Checks sizes (as gpt_config_check), n_head dividing n_embd, a shared vocabulary's two
 * sizes being equal, and the block options (GAU's relu^2 attention is causal by
 * construction, so the encoder refuses it: use --gau-attn softmax). Fills in the block
 * options' zero defaults. Returns 0, or -1 with a one-line reason in err. */
int seq2seq_config_check(seq2seq_config *cfg, char *err, size_t errlen);

/* The model's own tensors (layer -1) have these slots; block tensors have the block's. */
enum { S2S_SLOT_EMBED, S2S_SLOT_SRC_EMBED, S2S_SLOT_TGT_EMBED, S2S_SLOT_ENC_LN_W, S2S_SLOT_ENC_LN_B,
       S2S_SLOT_DEC_LN_W, S2S_SLOT_DEC_LN_B };

/* The tensors of a model with this config in checkpoint order (embeddings, encoder blocks,
 * encoder.ln_f, decoder blocks, decoder.ln_f, then the buffers). A block tensor's `layer` is
 * its layer in its stack; decoder tensors are told apart by their name's "decoder." prefix
 * and by seq2seq_param_is_decoder. Writes to out when not NULL; returns the count. */
int seq2seq_param_specs(const seq2seq_config *cfg, param_spec *out);
int seq2seq_param_is_decoder(const param_spec *spec);

typedef struct seq2seq_model {
    kiln_ctx *ctx;
    seq2seq_config cfg;
    kiln_dtype dtype;
    kiln_tensor *src_embed, *tgt_embed; /* the same tensor under a shared vocabulary */
    kiln_tensor *enc_ln_w, *enc_ln_b, *dec_ln_w, *dec_ln_b; /* Pre-LN only */
    kiln_tensor *pe;                    /* the sinusoidal table [max_len, C], model dtype */
    block_config enc_block, dec_block;
    block_weights *enc, *dec;             /* what the forward pass reads */
    block_weights *enc_masters, *dec_masters; /* the f32 weights */
    model_param *params;
    int n_params, n_buffers;
} seq2seq_model;

seq2seq_model *seq2seq_new(kiln_ctx *ctx, const seq2seq_config *cfg);
void seq2seq_free(seq2seq_model *m);

/* Embeddings normal(0, C^-1/2) (so that E * sqrt(C) has unit scale), the blocks' matrices
 * Xavier-normal (block_init_param; DeepNorm's scaled by beta), sigma-reparam's power
 * iteration. */
kiln_status seq2seq_init(seq2seq_model *m, uint64_t seed);
/* Mixed precision, as gpt_set_precision. */
kiln_status seq2seq_set_precision(seq2seq_model *m, kiln_dtype dtype, int keep_masters);
kiln_status seq2seq_sigma_step(seq2seq_model *m);
/* Admin's closed form in each stack: every omega sqrt((N + 1) / ln(N + 1) - 1), N that
 * stack's residual sublayers (2 per encoder block, 3 per decoder block). */
kiln_status seq2seq_admin_closed_form(seq2seq_model *m);
int64_t seq2seq_param_count(const seq2seq_model *m);

/* The encoder's output [B, S, C] for source ids [B, S] (i32) with lengths src_len (i32 [B],
 * or NULL when no row is padded). */
kiln_tensor *seq2seq_encode(seq2seq_model *m, kiln_tensor *src, kiln_tensor *src_len, float dropout);
/* Logits [B, T, V_tgt] of decoder inputs tgt_in [B, T] attending to memory. */
kiln_tensor *seq2seq_decode(seq2seq_model *m, kiln_tensor *memory, kiln_tensor *src_len,
                            kiln_tensor *tgt_in, float dropout);
/* Mean cross-entropy (with label smoothing) over the targets that are not -1. */
kiln_tensor *seq2seq_loss(seq2seq_model *m, kiln_tensor *src, kiln_tensor *src_len, kiln_tensor *tgt_in,
                          kiln_tensor *tgt_out, float dropout, float label_smoothing);

/* A padded batch on the host: rows x src_width source ids and rows x tgt_width decoder
 * inputs and targets (-1 past each row's end). */
typedef struct seq2seq_batch {
    int rows, src_width, tgt_width;
    int32_t *src, *src_len, *tgt_in, *tgt_out;
} seq2seq_batch;
/* Uploads a batch and returns its loss (as seq2seq_loss). */
kiln_tensor *seq2seq_batch_loss(seq2seq_model *m, const seq2seq_batch *b, float dropout, float label_smoothing);

/* Training's monitoring (model/metrics.h). The attention entropy of batch b in evaluation
 * mode: per_layer[enc_layers + dec_layers], the encoder's self-attention layers then the
 * decoder's (cross-attention is not probed), and the lowest head's in *lowest. Padded
 * queries count as the rest (the batch's rows are of similar lengths). */
kiln_status seq2seq_attention_entropy(seq2seq_model *m, const seq2seq_batch *b, double *per_layer, double *lowest);
/* The gradient norm of each block's parameters, encoder blocks then decoder blocks, in
 * out[enc_layers + dec_layers] (as model_params_layer_grad_norms). */
kiln_status seq2seq_layer_grad_norms(seq2seq_model *m, double unscale, double *out);

/* ---- decoding ----
 * One source sentence at a time: the encoder runs once; each decoder layer's cross-attention
 * keys and values are computed once; every hypothesis keeps a KV cache of its decoder
 * self-attention. */
typedef struct seq2seq_search_opts {
    int beam;             /* 1: greedy */
    float length_penalty; /* GNMT's alpha: hypotheses rank by log P / ((5 + |Y|) / 6)^alpha */
    int max_len;          /* output tokens at most (EOS excluded); <= cfg.max_len - 1 */
    int32_t bos, eos;
} seq2seq_search_opts;

/* Translates src[0..n) (without EOS: it is appended). Writes up to cap tokens (EOS not
 * included) to out and returns their number, or -1 with the engine's error set. *score
 * (may be NULL) receives the winner's length-normalized log-probability. */
int seq2seq_translate(seq2seq_model *m, const int32_t *src, int n, const seq2seq_search_opts *o,
                      int32_t *out, int cap, double *score);

/* Greedy translation of n sources at once (srcs[i] of lens[i] tokens, without EOS): one
 * encoder pass over the padded batch, and one decoder step per position for every row
 * together (a row that has emitted EOS rides along, ignored), so a file of inputs costs a
 * fraction of one-at-a-time decoding. Row i's tokens (EOS not included) go to
 * outs[i * cap ...], their number to out_lens[i]. Gives seq2seq_translate's greedy result
 * (the batch's padding cannot change a row). Returns 0, or -1 with the engine's error set. */
int seq2seq_translate_batch(seq2seq_model *m, const int32_t *const *srcs, const int *lens, int n,
                            const seq2seq_search_opts *o, int32_t *outs, int cap, int *out_lens);

#endif
