/* The kinds' tables (cli/model_kind.h), and finding one by name or by checkpoint. */
#include "cli/model_kind.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "model/model_checkpoint.h"

/* The default kind (no --model, a checkpoint without model_type) first. */
static const model_kind *const kinds[] = {&gpt_kind, &seq2seq_kind, &bert_kind};
enum { N_KINDS = sizeof kinds / sizeof kinds[0] };

const model_kind *model_kind_find(const char *name) {
    for (int i = 0; i < N_KINDS; i++)
        if (!strcmp(kinds[i]->name, name)) return kinds[i];
    return NULL;
}

const model_kind *model_kind_find_parity(const char *name) {
    for (int i = 0; i < N_KINDS; i++)
        if (!strcmp(kinds[i]->parity, name)) return kinds[i];
    return NULL;
}

const char *model_kind_names(int parity) {
    static char names[2][256];
    char *out = names[parity != 0];
    if (!*out)
        for (int i = 0, at = 0; i < N_KINDS; i++)
            at += snprintf(out + at, sizeof names[0] - (size_t)at, "%s%s", i ? ", " : "",
                           parity ? kinds[i]->parity : kinds[i]->name);
    return out;
}

const model_kind *model_kind_of_command(int argc, char **argv) {
    const char *ckpt = NULL;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--ckpt") && i + 1 < argc) ckpt = argv[i + 1];
        if (!strncmp(argv[i], "--ckpt=", 7)) ckpt = argv[i] + 7;
    }
    char type[64], err[256];
    if (ckpt && model_checkpoint_meta(ckpt, "model_type", type, sizeof type, err, sizeof err) == 1)
        for (int i = 0; i < N_KINDS; i++)
            if (kinds[i]->model_type && !strcmp(kinds[i]->model_type, type)) return kinds[i];
    return kinds[0];
}
