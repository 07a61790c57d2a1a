/* A GPT's weights quantized in place, in memory: the same tensors, blocks and bytes as
 * `kiln export --format gguf --type TYPE` (any quantized type or mix of gpt_quant_mix.h)
 * followed by loading that file (gpt_gguf.h, gpt_gguf_llama.h), without the file, for GPT-2's
 * block and the Llama family. `kiln bench decode` uses it to time every format on one model;
 * the GGUF readers decide what stays in blocks (gpt_keeps_quantized, import_stays_quantized)
 * and this follows them. */
#ifndef KILN_HOST_MODEL_GPT_QUANTIZE_H
#define KILN_HOST_MODEL_GPT_QUANTIZE_H

#include <stddef.h>

#include "kiln/quant.h"
#include "model/gpt/gpt.h"
#include "model/gpt/gpt_quant_mix.h"

/* 1 when weight s is kept in blocks by a quantized model: the blocks' four matrices (GPT-2's
 * Conv1D weights) and the token embedding, which is also the tied output head. The position
 * table and every 1-D tensor stay floats (gpt_gguf.h says why). */
int gpt_keeps_quantized(const gpt_param_spec *s);

/* Quantizes m's f32 weights (a model as gpt_new/gpt_init or a checkpoint made it, in f32
 * precision, not already quantized) to `type` (quantized: not f32 or f16), each tensor in the
 * type the GGUF writer gives it: the tensors the reader keeps in blocks become kiln_qmatrix
 * (and the embedding's blocks on the host, gpt_quantized) and their f32 tensors are freed; the
 * others (the position table, a fused matrix whose pieces differ in type, a row that falls
 * back to f16) are rounded through their file types, as reading the file gives them. Returns
 * 0, or -1 with one line in err (m is then unchanged or partly quantized: free it). */
int gpt_quantize(gpt_model *m, const gpt_quant_type *type, char *err, size_t errlen);

/* Bytes of the weights one decoded token reads: every matrix whole (quantized or not), one
 * row of each embedding table, the LayerNorms and biases. */
double gpt_weight_bytes_per_token(const gpt_model *m);

#endif
