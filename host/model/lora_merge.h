/* LoRA adapters merged into their base's weights (`kiln export --lora ADAPTER --merge-lora`):
 * W' = W + scale B A per adapted module, PEFT's merge_and_unload (scale = alpha / r times the
 * user's SCALE), on kiln's Conv1D [in, out] weights: W'[i, c0 + o] += scale sum_r B[o, r] A[r, i]
 * over the module's columns [c0, c0 + out) of its linear (lora_site: q, k, v in c_attn; gate,
 * up in the Llama family's c_fc). The sums run in double on the host. */
#ifndef KILN_HOST_MODEL_LORA_MERGE_H
#define KILN_HOST_MODEL_LORA_MERGE_H

#include <stddef.h>

#include "model/lora.h"

/* Adds every adapter's scale B A to m's f32 weights (a model read with quantized matrices or
 * in f16 is refused: read it with floats). The adapters need not be attached. Returns 0, or
 * -1 with one line in err. */
int lora_merge(gpt_model *m, lora_adapter *const *adapters, int n, char *err, size_t errlen);

#endif
