/* What every `kiln train --model ...` shares: the options (hyperparameters, schedules,
 * optimizers, the stability toolkit, precision, device), their checks, the run directory,
 * and resuming a run's optimizer state. cli/train.c runs every kind; a kind's own options and
 * phases are in its table (cli/kind_commands.h). */
#ifndef KILN_HOST_CLI_TRAIN_OPTIONS_H
#define KILN_HOST_CLI_TRAIN_OPTIONS_H

#include <stdint.h>

#include "cli/train_checkpoint.h"
#include "model/block.h"
#include "model/trainer.h"
#include "run/attention_option.h"
#include "run/cli.h"

/* The block options as typed (model/block.h), and the monitoring's. */
typedef struct stability_options {
    const char *norm, *residual, *layer_type, *gau_attn, *admin_init;
    int sigma_reparam, residual_attention, gau_s;
    float attn_temperature;
    cli_list temperature_at; /* STEP:T, each changing the temperature from that step on */
    int n_changes;
    int64_t change_step[CLI_LIST_MAX];
    float change_temp[CLI_LIST_MAX];
    float entropy_alert;     /* the progress line shows the lowest head's entropy below it */
    block_options block;     /* parsed */
} stability_options;

typedef struct train_options {
    const char *model; /* gpt (or its preset llama), seq2seq or bert */
    const char *data, *out, *init, *backend, *precision;
    const char *attention;         /* --attention, parsed into attention_mode */
    host_attention attention_mode; /* the run's choice, never the checkpoint's */
    const char *schedule, *optimizer;
    stability_options st;
    int device, resume, force;
    int trust_device; /* --trust-device: no first-use check of the device (cli/device_check.h) */
    const char *devices; /* --devices: each MPI rank's BACKEND[:N] (cli/train_parallel.h) */
    float bucket_mb;     /* --bucket-mb: the gradient allreduce's bucket size */
    float ls_init, ls_growth, ls_backoff; /* --loss-scale-*: fp16 only */
    int ls_interval;
    int layers, heads, dim;
    int vocab; /* the tokenizer's: a fresh GPT's vocab_size */
    int eval_every, eval_windows, log_every;
    train_hparams hp;
    /* the encoder-decoder's */
    int enc_layers, dec_layers; /* 0: --layers */
    int max_len, batch_tokens, separate_vocab;
    const char *tokenizer;
    /* LoRA (model/lora.h): adapters on --init's frozen base; lora is set by the checks when
       --lora-rank is given or --resume finds an adapter in --out */
    int lora, lora_rank;
    float lora_alpha, lora_dropout;
    const char *lora_targets;
    unsigned lora_seen; /* bit i: the i-th of --lora-rank, -alpha, -targets, -dropout was given */
} train_options;

/* train_options with every default but the model's own (layers, schedule, ...). */
train_options train_default_options(void);

/* Appends the options every model trains with to opts (room for TRAIN_COMMON_OPTIONS) and
 * returns their number. */
enum { TRAIN_COMMON_OPTIONS = 53 }; /* 22 + 16 + 11 + 4 (train_options.c's groups) */
int train_common_options(train_options *o, cli_opt *opts);

/* One choice-valued option: its index among names, or a one-line error listing them. */
int train_parse_choice(const char *option, const char *text, const char *const *names, int count, int *out);

/* The checks the option table's ranges cannot express, for every model: choices, the
 * block options, the temperature schedule, options that apply to other choices only,
 * precision, --data and --out given. Returns 0, or 1 with the error printed. */
int train_validate_options(train_options *o, const cli_opt *opts, int n);

/* For a kind whose Admin init has the closed form only (no profiling pass): 1 with the
 * error printed when the block is Admin's and --admin-init is not closed, else 0. */
int train_admin_closed_only(const train_options *o, const block_options *block, const char *kind);

/* The value of --model in argv (either form), or NULL: the commands dispatch on it before
 * parsing, since each model has options of its own. */
const char *train_model_option(int argc, char **argv);

/* --attention for a training run (run/attention_option.h): the path of a model with block
 * options b whose one micro-batch's pass holds `elements` scores (B H Tq Tk summed over its
 * attention sublayers) on the unfused path, at the run's precision and dropout; `context`
 * names the run's size in messages. Returns 1 (fused), 0 (unfused) or -1 (printed). */
int train_attention(const train_options *o, kiln_ctx *ctx, const block_options *b, uint64_t elements,
                    const char *context);

/* train_attention for a stack of n_layer self-attention layers of n_head heads over --batch
 * sequences of --block tokens (the GPT, BERT), whose block config b gets the choice. */
int train_attention_stack(const train_options *o, kiln_ctx *ctx, block_config *b, int n_layer, int n_head);

/* mkdir -p DIR, which must then be a directory (error printed, 1). */
int train_make_dir(const char *path);
int train_file_exists(const char *path);

#endif
