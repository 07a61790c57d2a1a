/* A GPT's LoRA adapter as llama.cpp's LoRA GGUF (the file llama_adapter_lora_init loads,
 * `kiln export --lora ADAPTER --format gguf`), and back (`kiln decode --lora FILE.gguf`).
 *
 * What llama.cpp's loader (src/llama-adapter.cpp) checks, and so what is written:
 *   - general.type "adapter", adapter.type "lora", general.architecture equal to the base
 *     model's (gpt2, llama, qwen2, qwen3), adapter.lora.alpha a FLOAT32;
 *   - per adapted matrix W of the base, "<W's GGUF name>.lora_a" with ne [n_in, r] and
 *     ".lora_b" with ne [r, n_out], where W has ne [n_in, n_out]: PEFT's lora_A [r, in] and
 *     lora_B [out, r] byte for byte (row-major = ggml's ne reversed), F32 here;
 *   - llama.cpp computes W x + scale B (A x) with scale = user_scale * alpha / r (r = lora_b's
 *     ne[0]; alpha 0 or absent: user_scale alone), PEFT's alpha / r.
 * The base names are gpt_names.h's: GPT-2's Conv1D modules attn.c_attn, attn.c_proj,
 * mlp.c_fc, mlp.c_proj are blk.N.attn_qkv, attn_output, ffn_up, ffn_down; the Llama family's
 * q/k/v/o_proj, gate/up/down_proj are blk.N.attn_q, attn_k, attn_v, attn_output, ffn_gate,
 * ffn_up, ffn_down. llama's q and k rows are permuted in its GGUF (convert_hf_to_gguf.py's
 * LlamaModel.permute): B's rows of q_proj and k_proj are permuted the same way on write and
 * un-permuted on read, A is untouched (its rows are the rank's).
 *
 * GPT-2's Conv1D needs no transpose: PEFT's Conv1D LoRA (fan_in_fan_out) keeps A [r, in] and
 * B [out, r] like a Linear's. (llama.cpp's own convert_lora_to_gguf.py transposes Conv1D's
 * pair as if it were the weight, swapping A and B, and llama.cpp then refuses the file with
 * "tensor ... has incorrect shape": docs/formats.md "LoRA adapters".)
 *
 * kiln's metadata about the base (model/lora.h's kiln.base.* keys) travels as string keys
 * llama.cpp lists and ignores. */
#ifndef KILN_HOST_MODEL_GPT_LORA_GGUF_H
#define KILN_HOST_MODEL_GPT_LORA_GGUF_H

#include <stddef.h>
#include <stdint.h>

#include "model/gpt/gpt.h"
#include "model/lora.h"

/* One adapted matrix: A [rank][in] and B [out][rank], row-major f32, B's rows in kiln's (and
 * Hugging Face's) order. */
typedef struct gpt_lora_pair {
    int layer;
    int module; /* lora_target: PEFT's module lora_target_modules[module] */
    int64_t rank, in, out;
    float *a, *b;
} gpt_lora_pair;

/* A string key of kiln's and its value. */
typedef struct gpt_lora_meta {
    const char *key, *value;
} gpt_lora_meta;

/* The architecture llama.cpp loads the base as ("gpt2", "llama", "qwen2", "qwen3"), and
 * whether its q/k rows are permuted there; NULL with one line in err for a model neither
 * gpt_export_gguf nor gpt_export_gguf_llama writes. */
const char *gpt_lora_gguf_arch(const gpt_config *cfg, int *permuted, char *err, size_t errlen);

/* in x out of `module` (a lora_target) in a model of cfg; -1 when the module is not of cfg's
 * family. */
int gpt_lora_module_shape(const gpt_config *cfg, int module, int64_t *in, int64_t *out);

/* The GGUF name of module's base tensor after "blk.N." ("attn_qkv.weight"). */
const char *gpt_lora_module_gguf(int module);
/* The head width in which llama's file permutes module's B rows (permuted: as
 * gpt_lora_gguf_arch says), 0 for none. */
int64_t gpt_lora_permute_hd(const gpt_config *cfg, int permuted, int module);

/* Writes the n pairs (each checked against cfg's shapes) with alpha and the meta keys as
 * llama.cpp's LoRA GGUF at path, atomically. Returns 0, or -1 with one line in err. */
int gpt_lora_gguf_save(const gpt_config *cfg, float alpha, const gpt_lora_pair *pairs, int n,
                       const gpt_lora_meta *meta, int n_meta, const char *path, char *err, size_t errlen);

/* An adapter read from a LoRA GGUF. */
typedef struct gpt_lora_gguf {
    float alpha; /* adapter.lora.alpha; the rank where the file has none (llama.cpp's scale 1) */
    int64_t rank;
    gpt_lora_pair *pairs; /* by layer, then module; a and b owned */
    int n;
    gpt_lora_meta *meta; /* the file's kiln.* string keys (copies) */
    int n_meta;
} gpt_lora_gguf;

/* Reads the LoRA GGUF at path for a base of config cfg: llama.cpp's checks (general.type,
 * adapter.type, the architecture, every tensor a .lora_a/.lora_b pair of a base matrix and
 * of its shape) and kiln's (one rank; matrices of the blocks only). Tensors F32, F16, BF16
 * or a block type kiln reads. Returns 0, or -1 with one line in err naming the file. */
int gpt_lora_gguf_load(const gpt_config *cfg, const char *path, gpt_lora_gguf *out, char *err, size_t errlen);
void gpt_lora_gguf_free(gpt_lora_gguf *g);

/* 1 when the file at path starts with GGUF's magic. */
int gpt_lora_is_gguf(const char *path);

#endif
