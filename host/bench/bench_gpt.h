/* The GPT that `kiln bench train` and `kiln bench precision` train: its shape and batch as
 * options (nanoGPT's CPU config by default), random byte data, and the model with its
 * trainer on a device. */
#ifndef KILN_HOST_BENCH_BENCH_GPT_H
#define KILN_HOST_BENCH_BENCH_GPT_H

#include "model/trainer.h"
#include "run/cli.h"

typedef struct bench_gpt {
    int layers, heads, dim;
    train_hparams hp; /* block, batch, seed, ... */
} bench_gpt;

/* 4 layers, 4 heads, dim 128 and train_nanogpt_hparams(), with a 1000-step LR schedule. */
bench_gpt bench_gpt_defaults(void);

/* The options of the model and batch shape: --layers, --heads, --dim, --block, --batch. */
enum { BENCH_GPT_OPTIONS = 5 };

/* A command's option table into opts (room for BENCH_GPT_OPTIONS + n_own): the shape
 * options, then a copy of `own`. Returns the number of options. */
int bench_gpt_options(bench_gpt *g, const cli_opt *own, int n_own, cli_opt *opts);

/* After parsing: --heads must divide --dim. Returns 0, or 1 after printing the error. */
int bench_gpt_check(const bench_gpt *g);

/* 1 MiB of random bytes drawn from hp.seed, as a data set: enough windows that batches do
 * not repeat (the throughput does not depend on the text). Returns 0, or 1 after printing
 * an error. */
int bench_gpt_data(const bench_gpt *g, data_set **out);

/* The model, initialised from hp.seed, and its trainer in `precision`, on ctx. Returns 0, or
 * 1 after printing an error; *m and *t are then as far as they got (gpt_free and
 * trainer_free them either way). */
int bench_gpt_build(const bench_gpt *g, kiln_ctx *ctx, const data_set *ds, kiln_dtype precision,
                    gpt_model **m, trainer *t);

/* The PyTorch script of a benchmark: `given` (--torch-script) when set, else the shipped file
 * `name` (run/share_file.h: the environment variable env_var, kiln's share/kiln/, a build tree's samples/),
 * into out. Returns 0, or 1 after printing an error. */
int bench_torch_script(const char *given, const char *name, const char *env_var, char *out, size_t size);

/* Runs a PyTorch peer (the shell command cmd, which runs `script`) and reads its stdout:
 * values[i] from the line "keys[i] X" (every key must appear), and into `about` the line that
 * starts with "torch " (its version and device; empty without one). Returns 0, or 1 after
 * printing an error (a missing script, a failed run, a key it did not print). */
int bench_torch_peer(const char *cmd, const char *script, const char *const *keys, double *values, int n_keys,
                     char *about, size_t size);

#endif
