/* GPT checkpoints in Hugging Face GPT-2's safetensors layout.
 *
 * Tensors: wte.weight [V, C], wpe.weight [T, C], h.{i}.ln_1.weight/bias [C],
 * h.{i}.attn.c_attn.weight [C, 3C] (Conv1D: y = x W + b), h.{i}.attn.c_attn.bias [3C],
 * h.{i}.attn.c_proj.weight [C, C], h.{i}.ln_2.*, h.{i}.mlp.c_fc.weight [C, 4C],
 * h.{i}.mlp.c_proj.weight [4C, C], their biases, ln_f.weight/bias. On read a leading
 * "transformer." is accepted, and HF's extra buffers (h.{i}.attn.bias,
 * h.{i}.attn.masked_bias, the tied lm_head.weight) are ignored; any other name is an error.
 *
 * Config: GPT2Config's keys (n_layer, n_head, n_embd, n_positions, vocab_size,
 * layer_norm_epsilon) in the safetensors metadata, or else in a config.json beside the
 * file. */
#ifndef KILN_HOST_MODEL_GPT_CHECKPOINT_H
#define KILN_HOST_MODEL_GPT_CHECKPOINT_H

#include <stddef.h>

#include "model/gpt/gpt.h"
#include "model/model_checkpoint.h"

/* A metadata entry a caller adds to a saved checkpoint. */
typedef model_meta gpt_meta;

/* Reads and validates a checkpoint completely (config, every name, shape and dtype) before
 * it allocates anything on ctx, then builds the model. Returns 0 and *out, or -1 with a
 * one-line message in err. */
int gpt_checkpoint_load(kiln_ctx *ctx, const char *path, gpt_model **out, char *err,
                        size_t errlen);

/* Writes the model's weights and config (plus `extra` metadata) atomically: an existing
 * file at path is replaced only by a complete new one. */
int gpt_checkpoint_save(const gpt_model *m, const char *path, const gpt_meta *extra,
                        int n_extra, char *err, size_t errlen);

#endif
