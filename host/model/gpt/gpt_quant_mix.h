/* The types a GPT is written in as GGUF (`kiln export --type`, `kiln quantize --format`) and
 * quantized to in memory (`kiln bench decode --formats`), and which ggml type each of its
 * tensors gets in each.
 *
 *   f32, f16                   every matrix in that type
 *   q8_0 q4_0 q4_1 q5_0 q5_1   "pure": every matrix llama.cpp quantizes in that type (llama.cpp's
 *   q4_k q5_k q6_k             llama-quantize --pure), the token embedding and output head too
 *   q4_k_m q4_k_s q5_k_m q5_k_s  llama.cpp's mixes of the same names: Q4_K or Q5_K with Q6_K
 *                              or Q5_K on the output head, some attn_v (gpt2's attn_qkv) and
 *                              ffn_down, as llama-quant.cpp chooses them
 *
 * The rules are llama.cpp's at 80fb11a (node-llama-cpp 3.21.1's bundle, src/llama-quant.cpp:
 * llama_tensor_get_type, llama_tensor_get_type_impl and tensor_type_fallback), which change
 * between versions: docs/quantization.md tabulates them. A row that is not whole blocks of the
 * chosen type falls back as tensor_type_fallback does (Q4_K to Q5_0, Q5_K to Q5_1, Q6_K to
 * Q8_0, then f16 where even 32 does not divide it). */
#ifndef KILN_HOST_MODEL_GPT_QUANT_MIX_H
#define KILN_HOST_MODEL_GPT_QUANT_MIX_H

#include <stdint.h>

/* Which of llama-quant.cpp's per-tensor rules a type applies. */
typedef enum gpt_mix_rules {
    GPT_MIX_NONE,   /* f32, f16 and the pure types: one type for every matrix */
    GPT_MIX_Q4_K_M,
    GPT_MIX_Q4_K_S,
    GPT_MIX_Q5_K_M,
    GPT_MIX_Q5_K_S
} gpt_mix_rules;

typedef struct gpt_quant_type {
    const char *name;    /* "q4_k_m", as the user writes it */
    int ggml_type;       /* the matrices' type (llama_ftype_get_default_type), formats/gguf.h */
    int ftype;           /* general.file_type: llama.cpp's llama_ftype */
    gpt_mix_rules rules;
} gpt_quant_type;

/* The types in the order above: f32, f16, then the quantized ones (kiln bench decode's
 * --formats indexes them). */
#define GPT_QUANT_TYPE_COUNT 14
const gpt_quant_type *gpt_quant_type_at(int i);

/* The type named `name` (any of the above), or NULL. */
const gpt_quant_type *gpt_quant_type_find(const char *name);

/* "f32, f16, q8_0, ..., q5_k_s": the names, for messages and help (from = 2 skips f32, f16). */
const char *gpt_quant_type_names(int from);

/* 1 when the type quantizes (not f32 or f16). */
int gpt_quant_type_quantized(const gpt_quant_type *t);

/* The ggml type of the 2-D weight `name` (GGUF's name: token_embd.weight, output.weight,
 * blk.N.attn_v.weight, ...) whose rows hold `cols` values, in a model of n_layer blocks whose
 * file has no output.weight (tied: the token embedding is quantized as the head) or has one.
 * position_embd (gpt2) is not a matrix llama.cpp quantizes: gpt_quant_table_type. */
int gpt_quant_tensor_type(const gpt_quant_type *t, const char *name, int64_t cols, int n_layer, int tied);

/* The ggml type of gpt2's position table: f16 in the pure types (kiln's own choice: a table
 * read one row per token), the model's f32 in the mixes (llama.cpp's tensor_allows_quantization
 * leaves position embeddings as they are), and the type itself for f32 and f16. */
int gpt_quant_table_type(const gpt_quant_type *t);

#endif
