/* The GPT the training benchmarks train (see bench_gpt.h). */
#define _POSIX_C_SOURCE 200809L
#include "bench/bench_gpt.h"
#include "run/share_file.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "kiln/rng.h"

bench_gpt bench_gpt_defaults(void) {
    bench_gpt g = {.layers = 4, .heads = 4, .dim = 128, .hp = train_nanogpt_hparams()};
    g.hp.steps = 1000; /* the lr schedule's length, as before: the timed steps all fall in its warmup */
    return g;
}

int bench_gpt_options(bench_gpt *g, const cli_opt *own, int n_own, cli_opt *opts) {
    const cli_opt shape[BENCH_GPT_OPTIONS] = {
        {.name = "--layers", .kind = CLI_INT, .target = &g->layers, .meta = "N",
         .help = "transformer blocks", .min = 1, .max = 1024},
        {.name = "--heads", .kind = CLI_INT, .target = &g->heads, .meta = "N",
         .help = "attention heads", .min = 1, .max = 1024},
        {.name = "--dim", .kind = CLI_INT, .target = &g->dim, .meta = "N",
         .help = "embedding width", .min = 1, .max = 65536},
        {.name = "--block", .kind = CLI_INT, .target = &g->hp.block, .meta = "N",
         .help = "context length", .min = 1, .max = 1 << 20},
        {.name = "--batch", .kind = CLI_INT, .target = &g->hp.batch, .meta = "N",
         .help = "sequences per step", .min = 1, .max = 1 << 20},
    };
    memcpy(opts, shape, sizeof shape);
    memcpy(opts + BENCH_GPT_OPTIONS, own, (size_t)n_own * sizeof *own);
    return BENCH_GPT_OPTIONS + n_own;
}

int bench_gpt_check(const bench_gpt *g) {
    if (g->dim % g->heads) return host_error("--heads %d does not divide --dim %d", g->heads, g->dim);
    return 0;
}

int bench_gpt_data(const bench_gpt *g, data_set **out) {
    enum { DATA_BYTES = 1 << 20 };
    char err[1024];
    uint8_t *bytes = malloc(DATA_BYTES);
    if (!bytes) return host_error("out of host memory");
    for (int i = 0; i < DATA_BYTES; i++) bytes[i] = (uint8_t)(kiln_rng_u32(g->hp.seed, 7, (uint64_t)i) & 0xff);
    int rc = data_from_bytes(bytes, DATA_BYTES, out, err, sizeof err) ? host_error("%s", err) : 0;
    free(bytes);
    return rc;
}

int bench_gpt_build(const bench_gpt *g, kiln_ctx *ctx, const data_set *ds, kiln_dtype precision,
                    gpt_model **m, trainer *t) {
    char err[1024];
    gpt_config cfg = {.n_layer = g->layers, .n_head = g->heads, .n_embd = g->dim,
                      .n_positions = g->hp.block, .vocab_size = GPT_BYTE_VOCAB,
                      .ln_eps = GPT_DEFAULT_LN_EPS};
    if (gpt_config_check(&cfg, err, sizeof err)) return host_error("%s", err);
    *m = gpt_new(ctx, &cfg);
    if (!*m || gpt_init(*m, g->hp.seed)) return host_engine_error("cannot create the model");
    train_hparams hp = g->hp;
    hp.precision = precision;
    if (trainer_init(t, *m, ds, &hp, err, sizeof err)) return host_error("%s", err);
    return 0;
}

int bench_torch_script(const char *given, const char *name, const char *env_var, char *out, size_t size) {
    if (given) {
        snprintf(out, size, "%s", given);
        return 0;
    }
    if (host_share_file(name, env_var, out, size))
        return host_error("cannot find the PyTorch script %s (pass --torch-script PATH)", name);
    return 0;
}

int bench_torch_peer(const char *cmd, const char *script, const char *const *keys, double *values, int n_keys,
                     char *about, size_t size) {
    struct stat st;
    if (stat(script, &st)) return host_error("cannot find the PyTorch script %s (pass --torch-script PATH)", script);
    fflush(stdout);
    FILE *p = popen(cmd, "r");
    if (!p) return host_error("cannot run %s", cmd);
    char line[512];
    unsigned found = 0;
    about[0] = 0;
    while (fgets(line, sizeof line, p)) {
        for (int i = 0; i < n_keys; i++) {
            size_t k = strlen(keys[i]);
            if (!strncmp(line, keys[i], k) && line[k] == ' ' && sscanf(line + k, "%lf", &values[i]) == 1)
                found |= 1u << i;
        }
        if (!strncmp(line, "torch ", 6)) {
            line[strcspn(line, "\n")] = 0;
            snprintf(about, size, "%.200s", line);
        }
    }
    int status = pclose(p);
    if (status != 0 || found != (1u << n_keys) - 1)
        return host_error("the PyTorch benchmark failed (exit status %d): run %s by hand to see why", status, script);
    return 0;
}
