/* The list of model kinds (model/model_kind.h). */
#include "model/model_kind.h"

#include <stdio.h>
#include <string.h>

#include "model/model_checkpoint.h"

/* The default kind (no --model, a checkpoint without model_type) first. */
static const model_kind *const kinds[] = {&gpt_model_kind, &seq2seq_model_kind, &bert_model_kind};
enum { N_KINDS = sizeof kinds / sizeof kinds[0] };

const model_kind *const *model_kinds(int *count) {
    *count = N_KINDS;
    return kinds;
}

const model_kind *model_kind_find(const char *name) {
    for (int i = 0; i < N_KINDS; i++) {
        if (!strcmp(kinds[i]->name, name)) return kinds[i];
        for (const char *const *p = kinds[i]->presets; p && *p; p++)
            if (!strcmp(*p, name)) return kinds[i];
    }
    return NULL;
}

const model_kind *model_kind_of_checkpoint(const char *path) {
    char type[64], err[256];
    if (model_checkpoint_meta(path, "model_type", type, sizeof type, err, sizeof err) == 1)
        for (int i = 0; i < N_KINDS; i++)
            if (kinds[i]->model_type && !strcmp(kinds[i]->model_type, type)) return kinds[i];
    return kinds[0];
}

const char *model_kind_list(const char *(*name_of)(const model_kind *kind), char *buf, size_t size) {
    *buf = 0;
    for (int i = 0, at = 0; i < N_KINDS && (size_t)at < size; i++)
        at += snprintf(buf + at, size - (size_t)at, "%s%s", i ? ", " : "", name_of(kinds[i]));
    return buf;
}

/* A kind's name and its presets' ("gpt, llama"). */
static const char *kind_name(const model_kind *kind) {
    static char names[128];
    int at = snprintf(names, sizeof names, "%s", kind->name);
    for (const char *const *p = kind->presets; p && *p && (size_t)at < sizeof names; p++)
        at += snprintf(names + at, sizeof names - (size_t)at, ", %s", *p);
    return names;
}

const char *model_kind_names(void) {
    static char names[256];
    return *names ? names : model_kind_list(kind_name, names, sizeof names);
}
