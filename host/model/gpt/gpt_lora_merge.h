/* LoRA adapters merged into a GPT's f32 weights (`kiln export --lora ADAPTER --merge-lora`):
 * W' = W + scale B A per adapted matrix, PEFT's merge_and_unload (scale = alpha / r times the
 * user's scale), on kiln's Conv1D [in, out] weights: W'[i, c0 + o] += scale sum_r B[o, r] A[r, i]
 * where the module's outputs start at column c0 of its weight (q, k, v in c_attn; gate, up in
 * the Llama family's c_fc). The sums run in double on the host. */
#ifndef KILN_HOST_MODEL_GPT_LORA_MERGE_H
#define KILN_HOST_MODEL_GPT_LORA_MERGE_H

#include <stddef.h>

#include "model/gpt/gpt.h"
#include "model/gpt/gpt_lora_gguf.h"

/* Where module's outputs sit in kiln's block: its weight's name after "h.N." and the first
 * column. Returns 0, or -1 when the module is not of cfg's family. */
int gpt_lora_module_place(const gpt_config *cfg, int module, const char **weight, int64_t *col0);

/* Adds scale B A of every pair to m's f32 weights (a model read with quantized matrices is
 * refused: read it dequantized). Returns 0, or -1 with one line in err. */
int gpt_lora_merge(gpt_model *m, const gpt_lora_pair *pairs, int n, float scale, char *err, size_t errlen);

#endif
