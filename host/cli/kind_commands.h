/* The commands' side of each model kind (model/model_kind.h): what `kiln train`, `eval`,
 * `decode` and `dev` run for it. The commands (cli/train.c, eval.c, decode.c, dev.c) go
 * through these tables instead of asking which model they run. A kind's weights, forward
 * passes and checkpoints live in its model room (model/<kind>/, built from the shared
 * block); its commands' table and the phases it plugs into them live in cli/<kind>/
 * (cli/<kind>/<kind>_commands.c holds the table). Adding a kind: docs/design.md, "How to add
 * a model kind".
 *
 * The tables hold what differs between kinds; everything else (the option parsing, the
 * device, the data-parallel set-up, the training loop, checkpoints of the optimizer state,
 * the one-line errors) is the commands' and is the same for every kind. The entries that run
 * a phase print their errors as the commands do ("kiln: error: ...") and return 1. */
#ifndef KILN_HOST_CLI_KIND_COMMANDS_H
#define KILN_HOST_CLI_KIND_COMMANDS_H

#include <stdint.h>

#include "run/cli.h"
#include "cli/train_loop.h"
#include "cli/train_options.h"
#include "kiln/kiln.h"
#include "model/model_kind.h"
#include "model/trainer.h"

/* The most options of its own a kind adds to `kiln train`'s common ones. */
enum { TRAIN_KIND_OPTIONS = 16 };

/* `kiln train --model NAME`, phase by phase (cli/train.c runs them in this order). `self`
 * is the kind's run, made by `create`; the loop hooks in `loop` get it too. */
typedef struct train_kind {
    const char *command; /* as `--help` and errors name it: "train" or "train --model bert" */
    const char *summary; /* --help's description */
    /* A run with the kind's defaults set in *o (which holds train_default_options()) and
     * its own options written to own[] (at most TRAIN_KIND_OPTIONS; their number in
     * *n_own). NULL: out of host memory. */
    void *(*create)(train_options *o, cli_opt *own, int *n_own);
    /* After parsing: the kind's own checks, before the run directory is looked at. NULL:
     * none. */
    int (*check)(void *self, const cli_opt *opts, int n);
    /* What needs no device: the tokenizers, and the data where they decide it. */
    int (*prepare)(void *self, const cli_opt *opts, int n, const run_paths *paths);
    /* On the device: the model (fresh, --init or resumed), the rest of the data, and the
     * trainer over them (trainer_init or trainer_init_model). */
    int (*start)(void *self, kiln_ctx *ctx, trainer *t);
    /* Once the run is open (a resumed one's state read), before any step: the attention's
     * path for the model (--attention, train_attention), set in its blocks' configs. */
    int (*attention)(void *self, kiln_ctx *ctx);
    /* Once the run is open, before the device line. NULL: nothing to say. */
    void (*opened)(void *self, const trainer *t);
    /* rank 0: the line describing the model, the data and the steps */
    void (*describe)(void *self, const trainer *t);
    /* the training loop's hooks (cli/train_loop.h); `self` is set to the run */
    train_loop_model loop;
    /* The full evaluation of a finished run resumed (no step ran). */
    int (*last_evaluation)(void *self, double *val);
    /* rank 0, at the end, after the steps' throughput: the final lines (stdout: `val loss X` and the
     * kind's own). */
    void (*report)(void *self, const trainer *t, double val);
    void (*destroy)(void *self); /* frees the run and what it holds but the context */
} train_kind;

typedef struct kind_commands {
    const model_kind *kind;  /* the model room's table: its name (--model NAME), its model_type */
    const train_kind *train;
    int (*eval)(int argc, char **argv);   /* `kiln eval` of its checkpoints */
    int (*decode)(int argc, char **argv); /* `kiln decode`; NULL: the default kind's (which refuses it) */
    const char *parity;                   /* `kiln dev NAME`: the PyTorch parity dump */
    int (*parity_dump)(int argc, char **argv);
} kind_commands;

extern const kind_commands gpt_commands, seq2seq_commands, bert_commands;

/* The default kind's commands (the first of model_kinds()). */
const kind_commands *kind_commands_default(void);

/* The commands of the kind named NAME (model_kind_find), or NULL. */
const kind_commands *kind_commands_find(const char *name);

/* The kind whose `kiln dev` parity command is NAME, or NULL. */
const kind_commands *kind_commands_find_parity(const char *name);

/* The parity commands' names as a list for messages: "parity, seq2seq-parity, bert-parity". */
const char *kind_commands_parity_names(void);

/* The kind that runs the checkpoint of --ckpt in argv (model_kind_of_checkpoint), the
 * default kind without one. */
const kind_commands *kind_commands_of_command(int argc, char **argv);

/* `kiln eval` or `kiln decode` (command) with --help in argv: the help of the kind the
 * checkpoint of --ckpt names, or without one that names a kind, every kind's in turn
 * (the default kind's first), each under a line naming its checkpoints. Returns the exit
 * code. */
int kind_commands_help(const char *command, int argc, char **argv);

#endif
