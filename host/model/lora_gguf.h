/* lora.h's adapters as llama.cpp's LoRA GGUF (model/gpt/gpt_lora_gguf.h says the layout) and
 * read back as an adapter: `kiln export --lora`, and lora_load's reading of a .gguf adapter. kiln's record of the base (lora.h's kiln.base.* keys) travels in
 * the GGUF as string keys, checked on read as in PEFT's files. */
#ifndef KILN_HOST_MODEL_LORA_GGUF_H
#define KILN_HOST_MODEL_LORA_GGUF_H

#include <stddef.h>

#include "model/gpt/gpt_lora_gguf.h"
#include "model/lora.h"

/* The adapter's matrices read from the device, one pair per (layer, target) it adapts (a and b
 * malloc'd: lora_pairs_free). Returns 0, or -1 with one line in err. */
int lora_pairs(const lora_adapter *a, gpt_lora_pair **pairs, int *n, char *err, size_t errlen);
void lora_pairs_free(gpt_lora_pair *pairs, int n);

/* Writes a (for a base of cfg, described by base: NULL writes no kiln.base.* keys) as llama.cpp's
 * LoRA GGUF at path, atomically, with adapter.lora.alpha = scale * rank (PEFT's alpha times a
 * SCALE the adapter was read with). Returns 0, or -1 with one line in err. */
int lora_save_gguf(const lora_adapter *a, const gpt_config *cfg, const lora_base_info *base, const char *path,
                   char *err, size_t errlen);

/* lora_load for a LoRA GGUF (lora_load's contract: base checks, scale, not attached). */
int lora_load_gguf(gpt_model *m, lora_base_info *base, const char *path, float scale, lora_adapter **out, char *err,
                   size_t errlen);

#endif
