/* The Llama family's GGUF files (llama.cpp's architectures llama, qwen2 and qwen3, as
 * convert_hf_to_gguf.py writes them) into a GPT: the keys <arch>.block_count,
 * .context_length, .embedding_length, .feed_forward_length, .attention.head_count,
 * .attention.head_count_kv, .attention.key_length (the head width; Qwen3's is not
 * width / heads), .rope.freq_base and .attention.layer_norm_rms_epsilon; the tensors of
 * gpt_names.h (output absent: tied; rope_freqs: Llama 3's scaling; attn_q.bias: Qwen2's
 * biases; attn_q_norm: Qwen3's), at F32, F16, BF16 (widened at load) or any block type
 * gpt_gguf_qformat maps, tensor by tensor (the matrices kept in blocks where the model can:
 * q, k and v of different types, as a Q4_K_M file's attn_v can be, become c_attn's floats). llama's q and k rows are un-permuted, so every family runs
 * in Hugging Face's order with the half-split rotation. */
#ifndef KILN_HOST_MODEL_GPT_GGUF_LLAMA_H
#define KILN_HOST_MODEL_GPT_GGUF_LLAMA_H

#include <stddef.h>

#include "formats/gguf.h"
#include "model/gpt/gpt.h"
#include "model/gpt/gpt_quant_mix.h"
#include "text/tokenizer.h"

/* 1 for "llama", "qwen2" and "qwen3". */
int gpt_gguf_is_llama_family(const char *arch);

/* Reads f (of architecture arch, named path in messages) into a GPT on ctx, its float weights
 * in dtype (gpt_hf.h's gpt_load_hf says how), its quantized matrices kept in blocks when
 * keep_blocks, else dequantized to floats. Everything is
 * checked before the model is allocated. Returns 0, or -1 with one line in err (an
 * architecture kiln does not read is named). */
int gpt_load_gguf_llama(kiln_ctx *ctx, const gguf_file *f, const char *path, const char *arch, kiln_dtype dtype,
                        int keep_blocks, gpt_model **out, char *err, size_t errlen);

/* Writes m (a Llama-family model: gpt_llama_arch names its architecture; its f32 weights)
 * with tokenizer tok as GGUF at path, atomically: the keys and tensor names
 * convert_hf_to_gguf.py writes (llama's q/k rows permuted, output only when untied,
 * rope_freqs when the rope is scaled), each matrix in the ggml type gpt_quant_tensor_type
 * gives it in `type` (a tied token_embd as the output head; rows that are not whole blocks
 * fall back as llama.cpp's do), 1-D tensors in f32. Returns 0, or -1 with one line in err. */
int gpt_export_gguf_llama(const gpt_model *m, const tokenizer *tok, const gpt_quant_type *type, const char *path,
                          char *err, size_t errlen);

#endif
