/* What the `kiln dev` parity dumps share (cli/<kind>/<kind>_parity.c, dispatched by cli/dev.c). */
#ifndef KILN_HOST_CLI_DEV_DUMP_H
#define KILN_HOST_CLI_DEV_DUMP_H

#include "run/cli.h"
#include "formats/safetensors.h"
#include "kiln/kiln.h"
#include "model/trainer.h"

/* Downloads t as f32 and adds it to the writer under `name` (the writer copies it).
 * Returns 0 or -1. */
int dev_add_tensor(st_writer *w, const char *name, const kiln_tensor *t);

/* Runs `steps` optimizer steps of t (its micro_loss hook: the same batch each time), adds
 * their losses to the writer as "losses" and saves it to `out`. Returns 0, or 1 with the
 * error printed. */
int dev_train_and_save(trainer *t, int steps, st_writer *w, const char *out);

/* Reads the integer tensor `name` of rank ndim from f (the file at path) into a new i32
 * array (the caller frees it) and its shape, checking every value is in [lo, hi). Returns
 * NULL with a message naming the file and the tensor. */
int32_t *dev_read_ints(const st_file *f, const char *path, const char *name, int ndim, int64_t lo, int64_t hi,
                       int64_t *shape, char *err, size_t errlen);

/* A kind's same-batch parity dump (`kiln dev <kind>-parity --ckpt W --batch B --out R
 * [--steps N --lr X]`): at the initial weights, its logits, loss and gradients; then the
 * loss of each of N AdamW steps on the same batch (constant learning rate, weight decay 0.1
 * on matrices and embeddings, beta2 0.99, no clipping). What differs between kinds: */
typedef struct dev_batch_parity {
    const char *command;              /* "dev bert-parity" */
    const char *summary;              /* --help's description */
    const char *ckpt_help, *batch_help;
    cli_opt extra;                    /* an option of its own after --lr (.name NULL: none) */
    /* The model from ckpt and the batch from batch, into self, and the trainer's view of them
     * (its micro_loss: the batch, each time). Returns 0 or -1 with err. */
    int (*load)(void *self, kiln_ctx *ctx, const char *ckpt, const char *batch, train_model *model, char *err,
                size_t errlen);
    /* Adds the logits, the loss and every gradient at the current weights to w. Returns 0 or
     * -1 with err. */
    int (*dump)(void *self, st_writer *w, char *err, size_t errlen);
    void (*free)(void *self); /* what load made */
} dev_batch_parity;

/* Runs the dump for argv (its options from argv[3]). Returns the exit code: 77 when the
 * backend cannot be opened here (CTest's "skipped"). */
int dev_batch_parity_run(const dev_batch_parity *k, void *self, int argc, char **argv);

#endif
