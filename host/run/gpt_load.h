/* The GPT a command runs (eval, decode, export): a kiln checkpoint (safetensors, GPT-2
 * layout) or a GGUF file of llama.cpp's gpt2 (model/gpt/gpt_gguf.h: f32, f16, Q8_0, Q4_0 and
 * Q4_1 tensors; the quantized matrices stay quantized), told apart by the file's first
 * bytes, with its tokenizer: --tokenizer FILE when given, else the file's own (the
 * checkpoint's metadata, GGUF's tokenizer.ggml.*), else bytes for a 256-token model. */
#ifndef KILN_HOST_RUN_GPT_LOAD_H
#define KILN_HOST_RUN_GPT_LOAD_H

#include "model/gpt/gpt.h"
#include "text/tokenizer.h"

/* Returns 0 with *m and *tok, or 1 with one line printed. */
int host_load_gpt(kiln_ctx *ctx, const char *path, const char *tok_path, gpt_model **m, tokenizer **tok);

/* 1 when the file starts as GGUF does. */
int host_is_gguf(const char *path);

#endif
