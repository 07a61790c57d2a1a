/* `kiln bench train`: training throughput of kiln and of PyTorch (CPU) on the same GPT and
 * batch shape, measured in one run, with their ratio.
 *
 * kiln trains in this process; PyTorch runs samples/nanogpt_torch.py --bench with the same
 * options and reports its own tokens/s. Both time only the steps after a few warm-up
 * steps, on random byte tokens (the throughput does not depend on the text). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "commands.h"
#include "device.h"
#include "progress.h"
#include "trainer.h"

#ifndef KILN_SOURCE_DIR
#define KILN_SOURCE_DIR "."
#endif

typedef struct bench_options {
    int layers, heads, dim, steps, warmup_steps, threads;
    const char *backend, *python, *script;
    int device, no_torch;
    train_hparams hp;
} bench_options;

/* kiln's tokens/s over `steps` timed steps. Returns 0 or prints an error and returns 1. */
static int bench_kiln(const bench_options *o, double *tokens_per_s, char *device, size_t size) {
    const train_hparams *hp = &o->hp;
    char err[1024];
    /* 1 MiB of random bytes: enough windows that batches do not repeat */
    enum { DATA_BYTES = 1 << 20 };
    uint8_t *bytes = malloc(DATA_BYTES);
    data_set *ds = NULL;
    kiln_ctx *ctx = NULL;
    gpt_model *m = NULL;
    trainer t = {0};
    int rc = 1;
    if (!bytes) return host_error("out of host memory");
    for (int i = 0; i < DATA_BYTES; i++) bytes[i] = (uint8_t)(kiln_rng_u32(hp->seed, 7, (uint64_t)i) & 0xff);
    gpt_config cfg = {o->layers, o->heads, o->dim, hp->block, GPT_BYTE_VOCAB, GPT_DEFAULT_LN_EPS};
    if (gpt_config_check(&cfg, err, sizeof err) ||
        data_from_bytes(bytes, DATA_BYTES, &ds, err, sizeof err)) {
        host_error("%s", err);
        goto done;
    }
    if (!(ctx = host_open_device(o->backend, o->device))) goto done;
    host_say_device("bench train", ctx);
    snprintf(device, size, "%s, %s", kiln_backend_name(ctx), kiln_device_name(ctx));
    m = gpt_new(ctx, &cfg);
    if (!m || gpt_init(m, hp->seed)) {
        host_engine_error("cannot create the model");
        goto done;
    }
    if (trainer_init(&t, m, ds, hp, err, sizeof err)) {
        host_error("%s", err);
        goto done;
    }
    double start = 0;
    for (int s = 0; s < o->warmup_steps + o->steps; s++) {
        if (s == o->warmup_steps) start = progress_now();
        train_step_stats st;
        if (trainer_step(&t, &st, err, sizeof err)) {
            host_error("%s", err);
            goto done;
        }
    }
    double secs = progress_now() - start;
    *tokens_per_s = (double)o->steps * hp->batch * hp->block * hp->grad_accum / secs;
    rc = 0;
done:
    trainer_free(&t);
    gpt_free(m);
    kiln_close(ctx);
    data_free(ds);
    free(bytes);
    return rc;
}

/* PyTorch's tokens/s from the script's line "tokens_per_s X". */
static int bench_torch(const bench_options *o, double *tokens_per_s, char *about, size_t size) {
    const train_hparams *hp = &o->hp;
    struct stat st;
    if (stat(o->script, &st))
        return host_error("cannot find the PyTorch script %s (pass --torch-script PATH)", o->script);
    char cmd[8192];
    snprintf(cmd, sizeof cmd,
             "'%s' '%s' --bench --layers %d --heads %d --dim %d --block %d --batch %d "
             "--steps %d --warmup-steps %d --lr %g --weight-decay %g --beta1 %g --beta2 %g "
             "--clip %g --dropout %g --threads %d",
             o->python, o->script, o->layers, o->heads, o->dim, hp->block, hp->batch, o->steps,
             o->warmup_steps, (double)hp->lr, (double)hp->weight_decay, (double)hp->beta1,
             (double)hp->beta2, (double)hp->clip, (double)hp->dropout, o->threads);
    fflush(stdout);
    FILE *p = popen(cmd, "r");
    if (!p) return host_error("cannot run %s", o->python);
    char line[512];
    int found = 0;
    about[0] = 0;
    while (fgets(line, sizeof line, p)) {
        if (sscanf(line, "tokens_per_s %lf", tokens_per_s) == 1) found = 1;
        if (!strncmp(line, "torch ", 6)) {
            line[strcspn(line, "\n")] = 0;
            snprintf(about, size, "%.200s", line);
        }
    }
    int status = pclose(p);
    if (status != 0 || !found)
        return host_error("the PyTorch benchmark failed (exit status %d): run %s by hand to see why",
                          status, o->script);
    return 0;
}

int cmd_bench_train(int argc, char **argv) {
    bench_options o = {4, 4, 128, 50, 5, 0, "cpu", "/usr/bin/python3",
                       KILN_SOURCE_DIR "/samples/nanogpt_torch.py", -1, 0, {0}};
    train_hparams *hp = &o.hp;
    *hp = train_nanogpt_hparams();
    hp->steps = 1000; /* the lr schedule's length, as before: the timed steps all fall in its warmup */
    cli_opt opts[] = {
        {"--layers", CLI_INT, &o.layers, "N", "transformer blocks", 1, 1024, 0},
        {"--heads", CLI_INT, &o.heads, "N", "attention heads", 1, 1024, 0},
        {"--dim", CLI_INT, &o.dim, "N", "embedding width", 1, 65536, 0},
        {"--block", CLI_INT, &hp->block, "N", "context length", 1, 1 << 20, 0},
        {"--batch", CLI_INT, &hp->batch, "N", "sequences per step", 1, 1 << 20, 0},
        {"--dropout", CLI_FLOAT, &hp->dropout, "P", "dropout probability", 0, 0.99, 0},
        {"--steps", CLI_INT, &o.steps, "N", "timed steps", 1, 1 << 30, 0},
        {"--warmup-steps", CLI_INT, &o.warmup_steps, "N", "untimed steps first", 0, 1 << 30, 0},
        {"--threads", CLI_INT, &o.threads, "N", "PyTorch threads (0: one per CPU, as kiln's OpenMP)", 0, 4096, 0},
        {"--backend", CLI_STRING, &o.backend, "NAME", HOST_BACKEND_HELP, 0, 0, 0},
        {"--device", CLI_INT, &o.device, "N", HOST_DEVICE_HELP, -1, 1000, 0},
        {"--python", CLI_STRING, &o.python, "PATH", "the Python with torch", 0, 0, 0},
        {"--torch-script", CLI_STRING, &o.script, "PATH", "the PyTorch side", 0, 0, 0},
        {"--no-torch", CLI_FLAG, &o.no_torch, NULL, "measure kiln only", 0, 0, 0},
    };
    int n = (int)(sizeof opts / sizeof opts[0]);
    const char *summary =
        "Trains the same GPT with the same batch shape in kiln and in PyTorch (CPU) and prints\n"
        "each one's training tokens/s and their ratio. Defaults: nanoGPT's CPU config.";
    int rc = cli_parse("bench train", summary, argc, argv, 3, opts, n);
    if (rc) return rc < 0 ? 1 : 0;
    if (o.dim % o.heads) return host_error("--heads %d does not divide --dim %d", o.heads, o.dim);

    double kiln_tps = 0, torch_tps = 0;
    char device[256], about[256];
    if (bench_kiln(&o, &kiln_tps, device, sizeof device)) return 1;
    printf("model: %d layers, %d heads, dim %d, block %d, batch %d; %d timed steps after %d\n",
           o.layers, o.heads, o.dim, hp->block, hp->batch, o.steps, o.warmup_steps);
    printf("kiln (%s): %.0f tokens/s\n", device, kiln_tps);
    fflush(stdout);
    if (o.no_torch) return 0;
    if (bench_torch(&o, &torch_tps, about, sizeof about)) return 1;
    printf("pytorch (%s): %.0f tokens/s\n", about[0] ? about : "cpu", torch_tps);
    printf("kiln / pytorch: %.2f\n", kiln_tps / torch_tps);
    return 0;
}
