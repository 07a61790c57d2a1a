/* The GPT a command runs (eval, decode, export, dev parity, train --init), from any of the
 * files kiln reads, told apart by the path: a Hugging Face folder (or its config.json:
 * model/gpt/gpt_hf.h, LlamaForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM, GPT2LMHeadModel
 * at F32, F16 or BF16), a GGUF file (by its first bytes: model/gpt/gpt_gguf.h, architectures
 * gpt2, llama, qwen2 and qwen3 at f32, f16, bf16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K and
 * Q6_K, tensor by tensor; the quantized matrices stay quantized), else a kiln checkpoint (safetensors, GPT-2 layout); with its tokenizer:
 * --tokenizer FILE when given, else the file's own (the checkpoint's metadata, GGUF's
 * tokenizer.ggml.*, the folder's tokenizer.json), else bytes for a 256-token model. */
#ifndef KILN_HOST_RUN_GPT_LOAD_H
#define KILN_HOST_RUN_GPT_LOAD_H

#include "model/gpt/gpt.h"
#include "text/tokenizer.h"

/* Returns 0 with *m and *tok, or 1 with one line printed. */
int host_load_gpt(kiln_ctx *ctx, const char *path, const char *tok_path, gpt_model **m, tokenizer **tok);

/* The same with the weights in dtype for eval and decode (KILN_F16: as gpt_set_precision(m,
 * KILN_F16, 0) leaves them; a GGUF or Hugging Face file is converted as it is read, never
 * held in f32). */
int host_load_gpt_as(kiln_ctx *ctx, const char *path, const char *tok_path, kiln_dtype dtype, gpt_model **m,
                     tokenizer **tok);

/* The same in f32 with a GGUF's quantized matrices dequantized (gpt_load_gguf_floats): what
 * a LoRA merge writes into. */
int host_load_gpt_floats(kiln_ctx *ctx, const char *path, const char *tok_path, gpt_model **m, tokenizer **tok);

/* The model alone (no tokenizer), f32 or in dtype. Returns 0 with *m, or -1 with one line in
 * err. */
int host_load_gpt_model(kiln_ctx *ctx, const char *path, gpt_model **m, char *err, size_t errlen);
int host_load_gpt_model_as(kiln_ctx *ctx, const char *path, kiln_dtype dtype, gpt_model **m, char *err, size_t errlen);

/* The tokenizer of the model at path (any of the files above): tok_path when given, else the
 * file's own, else bytes for a 256-token model (vocab < 0: not known yet, nothing checked).
 * Returns 0, or 1 with one line printed. */
int host_load_tokenizer(const char *path, const char *tok_path, int32_t vocab, tokenizer **tok);

/* 1 when the file starts as GGUF does, or its name ends in .gguf. */
int host_is_gguf(const char *path);

#endif
