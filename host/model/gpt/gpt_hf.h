/* A GPT from a Hugging Face model folder: config.json (formats/hf_config.h: LlamaForCausalLM,
 * Qwen2ForCausalLM, Qwen3ForCausalLM, GPT2LMHeadModel) with model.safetensors or the shards
 * that model.safetensors.index.json lists, their tensors F32, F16 or BF16 in HF's names and
 * [out, in] layout, read into kiln's names and GPT-2's Conv1D layout (gpt_import.h: q, k, v
 * stacked into c_attn; gate and up into c_fc; every matrix transposed; chunked, each file's
 * pages given back once read). The model runs in HF's order, with the half-split rotation
 * (rotate_half) for every family. */
#ifndef KILN_HOST_MODEL_GPT_HF_H
#define KILN_HOST_MODEL_GPT_HF_H

#include <stddef.h>

#include "formats/hf_config.h"
#include "model/gpt/gpt.h"
#include "text/tokenizer.h"

/* 1 when path is a folder holding config.json, or a file named config.json. */
int gpt_hf_is_folder(const char *path);

/* The folder of path (the folder itself, or the one holding its config.json). */
void gpt_hf_dir(const char *path, char *dir, size_t size);

/* kiln's config for an HF config (sizes, block options, rope); -1 with err for a model kiln's
 * GPT cannot build. */
int gpt_config_from_hf(const hf_config *hf, gpt_config *cfg, char *err, size_t errlen);

/* Reads the folder (or its config.json) into a GPT on ctx with its weights in dtype (KILN_F32,
 * or KILN_F16 as gpt_set_precision(m, KILN_F16, 0) leaves a model: converted at load, never
 * held in f32); *hf_out (may be NULL) receives its config (end ids, ...). Everything is
 * checked (config, every tensor's presence and shape) before the model is allocated.
 * Returns 0, or -1 with one line in err. */
int gpt_load_hf(kiln_ctx *ctx, const char *path, kiln_dtype dtype, gpt_model **out, hf_config *hf_out, char *err,
                size_t errlen);

/* Writes m (its f32 weights) as a Hugging Face folder dir (made when absent): config.json
 * (LlamaForCausalLM, Qwen2ForCausalLM or Qwen3ForCausalLM as gpt_llama_arch says, or
 * GPT2LMHeadModel for GPT-2's block), model.safetensors in HF's names and [out, in] layout
 * at dtype "F32", "F16" or "BF16" (GPT-2: "transformer." and its Conv1D layout, the tied
 * head left out as transformers saves it), and, given tok, tokenizer.json: the source
 * folder's (source: the model's Hugging Face folder, or NULL) byte for byte with its
 * tokenizer_config.json, else kiln's byte-level BPE as GPT-2's tokenizer.json spells it (a
 * tokenizer imported from elsewhere without its folder is refused). Every file atomically (kiln/file.h). A model
 * with rope scaling needs its llama3 parameters (`scaling`: kiln keeps only the factors,
 * rope.freqs; a Hugging Face source folder's config has them, gpt_hf_rope_scaling); a model
 * neither class holds is refused. Returns 0, or -1 with one line in err. */
int gpt_export_hf(const gpt_model *m, const tokenizer *tok, const char *dtype, const gpt_rope_llama3 *scaling,
                  const char *source, const char *dir, char *err, size_t errlen);

/* The llama3 rope scaling of an HF config (0), or 1 when it has none. */
int gpt_hf_rope_scaling(const hf_config *hf, gpt_rope_llama3 *out);

#endif
