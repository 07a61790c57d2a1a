/* What the `kiln dev` parity dumps share (cli/<kind>/<kind>_parity.c, dispatched by cli/dev.c). */
#ifndef KILN_HOST_CLI_DEV_DUMP_H
#define KILN_HOST_CLI_DEV_DUMP_H

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

#endif
