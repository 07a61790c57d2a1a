/* The commands' tables of the model kinds (cli/kind_commands.h), found through the model
 * room's list of kinds. */
#define _POSIX_C_SOURCE 200809L
#include "cli/kind_commands.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

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

/* The path of --ckpt in argv, or NULL. */
static const char *ckpt_option(int argc, char **argv) {
    const char *ckpt = NULL;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--ckpt") && i + 1 < argc) ckpt = argv[i + 1];
        if (!strncmp(argv[i], "--ckpt=", 7)) ckpt = argv[i] + 7;
    }
    return ckpt;
}

const kind_commands *kind_commands_of_command(int argc, char **argv) {
    const char *ckpt = ckpt_option(argc, argv);
    const kind_commands *found = ckpt ? of_kind(model_kind_of_checkpoint(ckpt)) : NULL;
    return found ? found : kind_commands_default();
}

/* The kind's entry for the command: eval, or decode (NULL where the kind does not decode). */
static int (*entry(const kind_commands *k, const char *command))(int, char **) {
    return !strcmp(command, "decode") ? k->decode : k->eval;
}

int kind_commands_help(const char *command, int argc, char **argv) {
    /* a checkpoint that is there says its kind (an unreadable one would be the default's) */
    const char *ckpt = ckpt_option(argc, argv);
    const kind_commands *found = ckpt && access(ckpt, R_OK) == 0 ? kind_commands_of_command(argc, argv) : NULL;
    char *help_argv[] = {argv[0], (char *)command, "--help", NULL};
    if (found && entry(found, command)) return entry(found, command)(3, help_argv);
    for (int i = 0; i < N_KINDS; i++) {
        if (!entry(all[i], command)) continue;
        if (i > 0) printf("\n==== %s checkpoints: `kiln %s --ckpt FILE` with one takes these options\n\n",
                          all[i]->kind->name, command);
        fflush(stdout);
        int rc = entry(all[i], command)(3, help_argv);
        if (rc) return rc;
    }
    return 0;
}
