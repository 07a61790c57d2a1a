/* What the `kiln dev` parity dumps share (cli/dev.c, cli/dev_seq2seq.c). */
#ifndef KILN_HOST_CLI_DEV_DUMP_H
#define KILN_HOST_CLI_DEV_DUMP_H

#include "formats/safetensors.h"
#include "kiln/kiln.h"

/* Downloads t as f32 and adds it to the writer under `name` (the writer copies it).
 * Returns 0 or -1. */
int dev_add_tensor(st_writer *w, const char *name, const kiln_tensor *t);

#endif
