/* Encoder-decoder checkpoints: safetensors with the tensors of seq2seq_param_specs and, in
 * the metadata, model_type "kiln-seq2seq", the config (enc_layers, dec_layers, n_head,
 * n_embd, max_len, src_vocab, tgt_vocab, shared_vocab, layer_norm_epsilon) and the block
 * options (kiln.*), plus what the caller adds (the tokenizer, the training step). */
#ifndef KILN_HOST_MODEL_SEQ2SEQ_CHECKPOINT_H
#define KILN_HOST_MODEL_SEQ2SEQ_CHECKPOINT_H

#include <stddef.h>

#include "model/model_checkpoint.h"
#include "model/seq2seq/seq2seq.h"

/* Reads and checks a checkpoint completely before allocating, then builds the model.
 * Returns 0 and *out, or -1 with a one-line message (a GPT's checkpoint is named as one). */
int seq2seq_checkpoint_load(kiln_ctx *ctx, const char *path, seq2seq_model **out, char *err, size_t errlen);

/* Writes the weights, config and `extra` metadata atomically. */
int seq2seq_checkpoint_save(const seq2seq_model *m, const char *path, const model_meta *extra, int n_extra,
                            char *err, size_t errlen);

#endif
