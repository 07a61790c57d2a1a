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

#include "bench/bench.h"
#include "bench/bench_gpt.h"
#include "run/device.h"
#include "run/progress.h"
#include "run/share_file.h"

typedef struct bench_train_options {
    bench_gpt gpt;
    int steps, warmup_steps, threads;
    const char *backend, *python, *script;
    int device, no_torch;
} bench_train_options;

/* kiln's tokens/s over `steps` timed steps. Returns 0 or prints an error and returns 1. */
static int bench_kiln(const bench_train_options *o, double *tokens_per_s, char *device, size_t size) {
    const train_hparams *hp = &o->gpt.hp;
    char err[1024];
    data_set *ds = NULL;
    kiln_ctx *ctx = NULL;
    gpt_model *m = NULL;
    trainer t = {0};
    int rc = 1;
    if (bench_gpt_data(&o->gpt, &ds)) goto done;
    if (!(ctx = host_open_device(o->backend, o->device))) goto done;
    host_say_device("bench train", ctx);
    snprintf(device, size, "%s, %s", kiln_backend_name(ctx), kiln_device_name(ctx));
    if (bench_gpt_build(&o->gpt, ctx, ds, KILN_F32, &m, &t)) goto done;
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
    return rc;
}

/* PyTorch's tokens/s from the script's line "tokens_per_s X". */
static int bench_torch(const bench_train_options *o, double *tokens_per_s, char *about, size_t size) {
    const train_hparams *hp = &o->gpt.hp;
    char script[4096];
    if (bench_torch_script(o->script, "nanogpt_torch.py", "KILN_TORCH_SCRIPT", script, sizeof script)) return 1;
    char cmd[8192];
    snprintf(cmd, sizeof cmd,
             "'%s' '%s' --bench --layers %d --heads %d --dim %d --block %d --batch %d "
             "--steps %d --warmup-steps %d --lr %g --weight-decay %g --beta1 %g --beta2 %g "
             "--clip %g --dropout %g --threads %d",
             o->python, script, o->gpt.layers, o->gpt.heads, o->gpt.dim, hp->block, hp->batch, o->steps,
             o->warmup_steps, (double)hp->lr, (double)hp->weight_decay, (double)hp->beta1,
             (double)hp->beta2, (double)hp->clip, (double)hp->dropout, o->threads);
    const char *key = "tokens_per_s";
    return bench_torch_peer(cmd, script, &key, tokens_per_s, 1, about, size);
}

int cmd_bench_train(int argc, char **argv) {
    for (int i = 3; i < argc; i++)
        if (!strcmp(argv[i], "--lora")) return cmd_bench_lora(argc, argv);
    bench_train_options o = {.gpt = bench_gpt_defaults(), .steps = 50, .warmup_steps = 5,
                             .backend = "cpu", .python = "/usr/bin/python3",
                             .device = -1};
    train_hparams *hp = &o.gpt.hp;
    const cli_opt own[] = {
        {.name = "--dropout", .kind = CLI_FLOAT, .target = &hp->dropout, .meta = "P",
         .help = "dropout probability", .min = 0, .max = 0.99},
        {.name = "--steps", .kind = CLI_INT, .target = &o.steps, .meta = "N",
         .help = "timed steps", .min = 1, .max = 1 << 30},
        {.name = "--warmup-steps", .kind = CLI_INT, .target = &o.warmup_steps, .meta = "N",
         .help = "untimed steps first", .min = 0, .max = 1 << 30},
        {.name = "--threads", .kind = CLI_INT, .target = &o.threads, .meta = "N",
         .help = "PyTorch threads (0: one per CPU, as kiln's OpenMP)", .min = 0, .max = 4096},
        host_backend_option(&o.backend),
        host_device_option(&o.device),
        {.name = "--python", .kind = CLI_STRING, .target = &o.python, .meta = "PATH",
         .help = "the Python with torch"},
        {.name = "--torch-script", .kind = CLI_STRING, .target = &o.script, .meta = "PATH",
         .help = "the PyTorch side (default: $KILN_TORCH_SCRIPT, else nanogpt_torch.py in kiln's share/kiln/)"},
        {.name = "--no-torch", .kind = CLI_FLAG, .target = &o.no_torch, .help = "measure kiln only"},
    };
    cli_opt opts[BENCH_GPT_OPTIONS + sizeof own / sizeof own[0]];
    int n = bench_gpt_options(&o.gpt, own, (int)(sizeof own / sizeof own[0]), opts);
    const char *summary =
        "Trains the same GPT with the same batch shape in kiln and in PyTorch (CPU) and prints\n"
        "each one's training tokens/s and their ratio. Defaults: nanoGPT's CPU config.";
    int rc = cli_parse("bench train", summary, argc, argv, 3, opts, n);
    if (rc) return rc < 0 ? 1 : 0;
    if (bench_gpt_check(&o.gpt)) return 1;

    double kiln_tps = 0, torch_tps = 0;
    char device[256], about[256];
    if (bench_kiln(&o, &kiln_tps, device, sizeof device)) return 1;
    printf("model: %d layers, %d heads, dim %d, block %d, batch %d; %d timed steps after %d\n",
           o.gpt.layers, o.gpt.heads, o.gpt.dim, hp->block, hp->batch, o.steps, o.warmup_steps);
    printf("kiln (%s): %.0f tokens/s\n", device, kiln_tps);
    fflush(stdout);
    if (o.no_torch) return 0;
    if (bench_torch(&o, &torch_tps, about, sizeof about)) return 1;
    printf("pytorch (%s): %.0f tokens/s\n", about[0] ? about : "cpu", torch_tps);
    printf("kiln / pytorch: %.2f\n", kiln_tps / torch_tps);
    return 0;
}
