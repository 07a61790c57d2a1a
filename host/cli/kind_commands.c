/* The commands' tables of the model kinds (cli/kind_commands.h), found through the model
 * room's list of kinds. */
#include "cli/kind_commands.h"

#include <stddef.h>
#include <string.h>

/* Each kind's commands, in the order of model_kinds(). */
static const kind_commands *const all[] = {&gpt_commands, &seq2seq_commands, &bert_commands};
enum { N_KINDS = sizeof all / sizeof all[0] };

static const kind_commands *of_kind(const model_kind *kind) {
    for (int i = 0; kind && i < N_KINDS; i++)
        if (all[i]->kind == kind) return all[i];
    return NULL;
}

const kind_commands *kind_commands_default(void) {
    int n;
    return of_kind(model_kinds(&n)[0]);
}

const kind_commands *kind_commands_find(const char *name) { return of_kind(model_kind_find(name)); }

const kind_commands *kind_commands_find_parity(const char *name) {
    for (int i = 0; i < N_KINDS; i++)
        if (!strcmp(all[i]->parity, name)) return all[i];
    return NULL;
}

static const char *parity_name(const model_kind *kind) {
    const kind_commands *c = of_kind(kind);
    return c ? c->parity : "";
}

const char *kind_commands_parity_names(void) {
    static char names[256];
    return *names ? names : model_kind_list(parity_name, names, sizeof names);
}

const kind_commands *kind_commands_of_command(int argc, char **argv) {
    const char *ckpt = NULL;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--ckpt") && i + 1 < argc) ckpt = argv[i + 1];
        if (!strncmp(argv[i], "--ckpt=", 7)) ckpt = argv[i] + 7;
    }
    const kind_commands *found = ckpt ? of_kind(model_kind_of_checkpoint(ckpt)) : NULL;
    return found ? found : kind_commands_default();
}
