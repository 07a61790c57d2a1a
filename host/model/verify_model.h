/* The whole-model checks of `kiln verify` and of the first-use check, beside the library's
 * op cases (they need the host's GPT): on the device against the CPU,
 *   gpt/train_step               one optimizer step of a small GPT: the loss, every weight's
 *                                gradient and every weight after AdamW; in f32, and in f16
 *                                (mixed precision with loss scaling);
 *   gpt/greedy_decode_kv_cache   32 greedily decoded tokens with the KV cache: every step's
 *                                logits and the chosen tokens;
 *   gpt/llama_train_step, gpt/llama_greedy_decode_kv_cache
 *                                the same for the Llama family's block: grouped-query attention
 *                                (KV heads < heads), rope, SwiGLU, RMSNorm, q/k norm and biases. */
#ifndef KILN_HOST_MODEL_VERIFY_MODEL_H
#define KILN_HOST_MODEL_VERIFY_MODEL_H

#include "kiln/kiln.h"

typedef struct verify_model_check {
    const char *name;
    kiln_verify_precision precision;
    int quick; /* in the quick subset */
    kiln_status (*run)(kiln_ctx *dev, kiln_ctx *cpu, kiln_dtype precision, kiln_verify_result *r);
    const char *shapes; /* the model and data, for the report */
} verify_model_check;

/* The checks, in the order they run; *count receives their number. */
const verify_model_check *verify_model_checks(int *count);

/* Runs one check (skipped on the CPU backend, the reference, and in f16 where the device
 * cannot store it). KILN_OK with the verdict in *r, or the error that stopped it. */
kiln_status verify_model_run(const verify_model_check *check, kiln_ctx *dev, kiln_ctx *cpu, kiln_verify_result *r);

#endif
