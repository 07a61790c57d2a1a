/* BERT checkpoints in Hugging Face BertForMaskedLM's tensor names and layouts (docs/bert.md):
 *
 *   kiln (block layout, model/block.h)        Hugging Face (nn.Linear: [out, in])
 *   <l>.ln_1.*                                 bert.encoder.layer.<l>.attention.output.LayerNorm.*
 *   <l>.attn.c_attn.weight [C, 3C]             ...attention.self.{query,key,value}.weight [C, C] each
 *   <l>.attn.c_attn.bias [3C]                  ...attention.self.{query,key,value}.bias [C] each
 *   <l>.attn.c_proj.weight [C, C]              ...attention.output.dense.weight (transposed)
 *   <l>.ln_2.*                                 ...output.LayerNorm.*
 *   <l>.mlp.c_fc.weight [C, 4C]                ...intermediate.dense.weight [4C, C]
 *   <l>.mlp.c_proj.weight [4C, C]              ...output.dense.weight [C, 4C]
 * (biases keep their shapes). The embeddings and the head are stored as the model holds them
 * (Hugging Face's names already); cls.predictions.decoder.weight is tied to the word
 * embeddings and not stored (on load it is ignored when its shape is [V, C], as are
 * bert.embeddings.position_ids and cls.predictions.decoder.bias). What BERT lacks keeps kiln's
 * names under "kiln.": a block's ReZero, Admin, GAU and sigma-reparam tensors are
 * bert.encoder.layer.<l>.kiln.<block name> (sigma-reparam's of q, k and v describe the fused
 * [C, 3C] matrix), Pre-LN's final LayerNorm is bert.encoder.kiln.ln_f.*, and a GAU layer
 * keeps all its tensors under kiln names.
 *
 * The metadata holds model_type "bert", Hugging Face's config keys (vocab_size, hidden_size,
 * num_hidden_layers, num_attention_heads, intermediate_size, max_position_embeddings,
 * type_vocab_size, layer_norm_eps, hidden_act "gelu_new") and the block options (kiln.*),
 * so kiln reloads a checkpoint alone; bert_write_hf_config writes the same as config.json. */
#ifndef KILN_HOST_MODEL_BERT_CHECKPOINT_H
#define KILN_HOST_MODEL_BERT_CHECKPOINT_H

#include <stddef.h>

#include "model/bert/bert.h"
#include "model/model_checkpoint.h"

/* How one Hugging Face tensor comes from one of the model's tensors. */
typedef enum bert_piece_kind {
    BERT_PIECE_COPY,   /* the same elements */
    BERT_PIECE_LINEAR, /* a Conv1D [in, out]'s columns [part w, (part + 1) w), transposed: [w, in] */
    BERT_PIECE_SLICE   /* a vector's elements [part w, (part + 1) w) */
} bert_piece_kind;

typedef struct bert_piece {
    char name[160];
    int ndim;
    int64_t shape[2];
    int param; /* the index of the model's tensor in bert_param_specs' order */
    bert_piece_kind kind;
    int part;
} bert_piece;

/* The Hugging Face tensors of the n specs (bert_param_specs(cfg)), in order. Writes to out
 * when not NULL; returns the count. */
int bert_hf_pieces(const bert_config *cfg, const param_spec *specs, int n, bert_piece *out);
/* Converts one tensor's f32 elements (spec's shape) to a piece's, and back. */
void bert_piece_export(const bert_piece *p, const param_spec *spec, const float *tensor, float *piece);
void bert_piece_import(const bert_piece *p, const param_spec *spec, const float *piece, float *tensor);

/* Adds the model's trained tensors and buffers (grads == 0) or the gradients of its trained
 * tensors (grads == 1) to w in Hugging Face's layout, each name prefixed with `prefix`
 * ("" or "grad."). Returns 0, or -1 with a message. */
int bert_hf_add(const bert_model *m, int grads, const char *prefix, st_writer *w, char *err, size_t errlen);

/* Reads and checks a checkpoint completely before allocating, then builds the model.
 * Returns 0 and *out, or -1 with a one-line message (another model's checkpoint is named). */
int bert_checkpoint_load(kiln_ctx *ctx, const char *path, bert_model **out, char *err, size_t errlen);

/* Writes the weights, config and `extra` metadata atomically. */
int bert_checkpoint_save(const bert_model *m, const char *path, const model_meta *extra, int n_extra, char *err,
                         size_t errlen);

/* Writes Hugging Face's config.json of the model (BertForMaskedLM) to path, atomically. */
int bert_write_hf_config(const bert_model *m, const char *path, char *err, size_t errlen);

#endif
