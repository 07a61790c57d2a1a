/* `kiln train --init BASE --lora-rank R ...` (model/lora.h): the GPT run's LoRA phases.
 * The base is read as it is stored (f16 under --precision fp16, quantized blocks kept) and
 * frozen; the adapter is new (PEFT's init from --seed) or, on --resume, the run's own,
 * whose base is --init or the path it recorded. Checkpoints are PEFT's files in --out. */
#ifndef KILN_HOST_CLI_GPT_GPT_TRAIN_LORA_H
#define KILN_HOST_CLI_GPT_GPT_TRAIN_LORA_H

#include "cli/train_options.h"
#include "model/lora.h"
#include "text/tokenizer.h"

typedef struct lora_run {
    char base[4096];     /* the base's path */
    char format[32];     /* its matrices' storage type as the file holds them */
    lora_base_info info; /* what the adapter records of it */
    lora_adapter *a;
} lora_run;

/* The base's path: --init, else the resumed adapter's kiln.base.path. 0, or 1 (printed). */
int lora_run_base(lora_run *r, const train_options *o, const run_paths *paths);

/* The frozen base (the caller checks its architecture against the options). NULL (printed). */
gpt_model *lora_run_load(lora_run *r, kiln_ctx *ctx, const train_options *o);

/* The adapter attached to m: new from the options, or the resumed run's. 0, or 1 (printed). */
int lora_run_adapter(lora_run *r, gpt_model *m, const tokenizer *tok, const train_options *o, const run_paths *paths);

/* The checkpoint: the optimizer state, then PEFT's files in --out. 0, or 1 (printed). */
int lora_run_save(const lora_run *r, const trainer *t, const train_options *o, const run_paths *paths);

/* The run's LoRA line for the summary. */
void lora_run_describe(const lora_run *r, const gpt_model *m);

void lora_run_free(lora_run *r);

#endif
