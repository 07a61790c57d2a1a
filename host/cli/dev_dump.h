/* What the `kiln dev` parity dumps share (cli/dev.c, cli/dev_seq2seq.c, cli/dev_bert.c). */
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

#endif
