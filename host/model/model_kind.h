/* The model kinds (gpt, seq2seq, bert) as the model room knows them: one table per kind,
 * defined in its sub-room (model/<kind>/<kind>_kind.c), and the list of them. Whatever runs
 * "every kind" goes through the list: `kiln verify`'s whole-model checks here, and the
 * commands, whose side of each kind (options, phases; cli/kind_commands.h) points back at
 * its table. Adding a kind: docs/design.md, "How to add a model kind". */
#ifndef KILN_HOST_MODEL_MODEL_KIND_H
#define KILN_HOST_MODEL_MODEL_KIND_H

#include <stddef.h>

#include "model/verify_model.h"

typedef struct model_kind {
    const char *name; /* "gpt": the name training chooses the kind by, and the `kiln verify` group of its checks */
    /* The `model_type` a checkpoint of this kind carries in its metadata; NULL: the default
     * kind, which also reads the files that carry none (GPT-2's layout). */
    const char *model_type;
    /* Its whole-model checks for `kiln verify` (model/verify_model.h), in the order they
     * run, their number in *count; NULL: none yet. */
    const verify_model_check *(*verify_checks)(int *count);
    /* Other names --model accepts for this kind, NULL-terminated (or NULL: none): presets
     * of its options, as the gpt kind's "llama" (its train command sets their defaults). */
    const char *const *presets;
} model_kind;

extern const model_kind gpt_model_kind, seq2seq_model_kind, bert_model_kind;

/* Every kind, the default one first; their number in *count. */
const model_kind *const *model_kinds(int *count);

/* The kind named NAME, or whose preset NAME is; NULL when none. */
const model_kind *model_kind_find(const char *name);

/* The kind of the checkpoint at path, from its model_type: the default kind when it has none,
 * when no kind claims it, or when the file cannot be read (that kind's loader then says
 * why). */
const model_kind *model_kind_of_checkpoint(const char *path);

/* The kinds' names and presets as a list for messages: "gpt, llama, seq2seq, bert". */
const char *model_kind_names(void);

/* What name_of says of each kind, as such a list, in buf. Returns buf. */
const char *model_kind_list(const char *(*name_of)(const model_kind *kind), char *buf, size_t size);

#endif
