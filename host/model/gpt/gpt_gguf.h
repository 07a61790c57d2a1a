/* A GPT as a GGUF file of llama.cpp's gpt2 architecture (the layout of llama.cpp's own
 * convert_hf_to_gguf.py for Hugging Face GPT-2), so that llama.cpp and the tools built on it
 * load kiln's models, at f32, f16 or quantized (kiln/quant.h: ggml's bytes) in any of
 * gpt_quant_mix.h's types: Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K and llama.cpp's mixes
 * Q4_K_M, Q4_K_S, Q5_K_M and Q5_K_S.
 *
 * Tensors: token_embd, position_embd, output_norm (ln_f) and output (the tied head: a copy of
 * token_embd, as the converter writes it), and per block blk.N.attn_norm, attn_qkv,
 * attn_output, ffn_norm, ffn_up, ffn_down (weights and biases). The Conv1D weights are
 * transposed to ggml's [out][in] rows. Which tensors a type changes: f16 turns every matrix
 * to f16; a quantized type quantizes the four matrices of each block, token_embd and output
 * (what decoding reads per token) each in the type gpt_quant_tensor_type gives it (llama.cpp
 * sees output.weight, so the pair is untied to its mixes: token_embd in the mix's type, output
 * as the head), keeps position_embd in gpt_quant_table_type's type (f16 in the pure types: a
 * table of n_positions rows, read one row per token) and every LayerNorm weight and bias in
 * f32 (1-D tensors: ggml keeps them f32 in every type, and their error would scale whole
 * layers).
 *
 * The tokenizer goes along as tokenizer.ggml.* of model "gpt2": each token's bytes in GPT-2's
 * byte-to-unicode spelling, the merges in rank order, special tokens as type 3 (control). A
 * byte-level model's 256 tokens are the bytes, with no merges.
 *
 * Only GPT-2's own block can be read by llama.cpp's gpt2: a model trained with other block
 * options (Post-LN, ReZero, Admin, DeepNorm, GAU, sigma-reparam, RealFormer, a temperature)
 * is refused by name. */
#ifndef KILN_HOST_MODEL_GPT_GGUF_H
#define KILN_HOST_MODEL_GPT_GGUF_H

#include <stddef.h>

#include "model/gpt/gpt.h"
#include "model/gpt/gpt_quant_mix.h"
#include "text/tokenizer.h"

/* Writes m (its f32 weights, read from the device) with tokenizer tok as GGUF at path,
 * atomically, in `type` (gpt_quant_mix.h: f32, f16, a pure type or a mix). Returns 0, or -1
 * with one line in err. */
int gpt_export_gguf(const gpt_model *m, const tokenizer *tok, const gpt_quant_type *type, const char *path, char *err,
                    size_t errlen);

/* Reads a GGUF of llama.cpp's gpt2 architecture (llama.cpp's own conversions of GPT-2 and
 * kiln's exports) into a GPT on ctx, and its tokenizer (byte-level, or a GPT-2 style BPE
 * from tokenizer.ggml.tokens and merges). f32 and f16 tensors become the model's f32
 * weights; quantized matrices (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K) stay
 * quantized each in its own format (gpt_quantized: the blocks' linears and the output head as
 * kiln_qmatrix on the device, the token embedding's blocks on the host; output.weight gives
 * the head when its type differs from token_embd's, as llama.cpp's mixes write them), other
 * quantized tensors (position_embd, a LayerNorm) are dequantized into their small f32 tables.
 * Any other ggml type is refused by name (formats/gguf.h). Returns 0, or -1 with one line in
 * err. */
int gpt_load_gguf(kiln_ctx *ctx, const char *path, gpt_model **model, tokenizer **tok, char *err, size_t errlen);

/* 1 when gpt_export_gguf writes c as llama.cpp's gpt2 (LayerNorm, GELU, learned positions:
 * gpt_not_gpt2 then names what else it must not have), 0 for the Llama family's architectures. */
int gpt_gguf_writes_gpt2(const gpt_config *c);

/* The first of m's choices that GPT-2's block (llama.cpp's gpt2, HF's GPT2LMHeadModel) does
 * not have, by its option's name and value ("norm post", "kv-heads 2"), into buf; NULL when
 * the config is GPT-2's. */
const char *gpt_not_gpt2(const gpt_config *c, char *buf, size_t size);

/* What the GGUF writers share (gpt_gguf.c, gpt_gguf_llama_write.c): a [rows, cols] f32
 * matrix in ggml type `type` (f32, f16 or a type gpt_gguf_qformat maps: malloc'd, *nbytes
 * long; NULL out of memory or for a row that is not whole blocks). */
void *gpt_gguf_convert(const float *x, int64_t rows, int64_t cols, int type, uint64_t *nbytes);

/* The same with the float weights in dtype (KILN_F16: converted at load, as gpt_set_precision(m,
 * KILN_F16, 0) leaves a model). */
int gpt_load_gguf_as(kiln_ctx *ctx, const char *path, kiln_dtype dtype, gpt_model **model, tokenizer **tok, char *err,
                     size_t errlen);

/* A GGUF tensor's values as f32 rows (malloc'd; NULL out of memory or for a block that does
 * not decode): f32 copied, f16 and bf16 widened, blocks dequantized. */
struct gguf_tensor;
float *gpt_gguf_values(const struct gguf_tensor *t);

/* The same with every quantized tensor dequantized to the model's f32 weights (a tied head
 * then is token_embd's: a mix's own output.weight is left), for what needs floats: merging a
 * LoRA adapter into the weights, re-exporting. */
int gpt_load_gguf_floats(kiln_ctx *ctx, const char *path, gpt_model **model, tokenizer **tok, char *err,
                         size_t errlen);

/* The kiln block format (kiln/quant.h) of a quantized ggml type (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1,
 * Q4_K, Q5_K, Q6_K); -1 for any other type. The one place the two numberings meet. */
int gpt_gguf_qformat(int type);

/* GGUF's name of kiln's weight `hf` ("h.3.mlp.c_fc.weight" -> "blk.3.ffn_up.weight") and
 * whether ggml stores it transposed (GPT-2's Conv1D weights). Returns 0, or -1 for a weight
 * llama.cpp's gpt2 has no place for. */
int gpt_gguf_name(const char *hf, char *out, size_t size, int *conv1d);

#endif
