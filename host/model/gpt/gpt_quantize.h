/* A GPT's weights quantized in place, in memory: the same tensors, blocks and bytes as
 * `kiln export --format gguf --type q8_0|q4_0` followed by loading that file (gpt_gguf.h),
 * without the file. `kiln bench decode` uses it to time every format on one model; the
 * GGUF reader uses gpt_keeps_quantized so both keep the same tensors in blocks. */
#ifndef KILN_HOST_MODEL_GPT_QUANTIZE_H
#define KILN_HOST_MODEL_GPT_QUANTIZE_H

#include <stddef.h>

#include "kiln/quant.h"
#include "model/gpt/gpt.h"

/* 1 when weight s is kept in blocks by a quantized model: the blocks' four matrices (GPT-2's
 * Conv1D weights) and the token embedding, which is also the tied output head. The position
 * table and every 1-D tensor stay floats (gpt_gguf.h says why). */
int gpt_keeps_quantized(const gpt_param_spec *s);

/* Quantizes m's f32 weights (a model as gpt_new/gpt_init or a checkpoint made it, in f32
 * precision, not already quantized) to `format`: the kept tensors become kiln_qmatrix (and the
 * embedding's blocks on the host, gpt_quantized) and their f32 tensors are freed; the
 * position table is rounded to f16, as the file stores it. Returns 0,
 * or -1 with one line in err (m is then unchanged or partly quantized: free it). */
int gpt_quantize(gpt_model *m, kiln_qformat format, char *err, size_t errlen);

/* Bytes of the weights one decoded token reads: every matrix whole (quantized or not), one
 * row of each embedding table, the LayerNorms and biases. */
double gpt_weight_bytes_per_token(const gpt_model *m);

#endif
