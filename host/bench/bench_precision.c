/* `kiln bench precision`: mixed precision (fp16) against fp32 training on one device: the
 * device memory of the weights, gradients, optimizer state and activations, and the time
 * of a training step, for the same GPT and batch.
 *
 * Both trainers live side by side, each in its own context (so each context's memory
 * counters describe one precision), and the timed steps alternate between them: on a
 * shared machine a burst of load then slows both alike, and the ratio stays fair.
 *
 * Memory is counted from the tensors themselves (elements times dtype size) and checked
 * against the engine's own counter of persistent bytes (kiln_memory_persistent); the
 * activations are the most the step arena held in one step (kiln_memory_arena_peak: the
 * activations of a micro-batch, their gradients and the backward's temporaries). */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "bench/bench_gpt.h"
#include "run/device.h"
#include "run/precision_option.h"
#include "run/progress.h"

typedef struct side {
    kiln_dtype dtype;
    kiln_ctx *ctx;
    gpt_model *m;
    trainer t;
    size_t weights, grads, moments, persistent, arena; /* bytes */
    double *step_s;  /* wall seconds of each timed step */
    double last_loss;
} side;

typedef struct bench_precision_options {
    bench_gpt gpt;
    int steps, warmup_steps, device;
    const char *backend;
} bench_precision_options;

/* Opens the device and builds one precision's model and trainer. */
static int side_open(side *s, const bench_precision_options *o, const data_set *ds, kiln_dtype dtype) {
    memset(s, 0, sizeof *s);
    s->dtype = dtype;
    if (!(s->ctx = host_open_device(o->backend, o->device))) return 1;
    if (host_check_precision(s->ctx, dtype)) return 1;
    if (bench_gpt_build(&o->gpt, s->ctx, ds, dtype, &s->m, &s->t)) return 1;
    s->step_s = calloc((size_t)o->steps, sizeof *s->step_s);
    if (!s->step_s) return host_error("out of host memory");
    for (int i = 0; i < s->m->n_params; i++) {
        const gpt_param *p = &s->m->params[i];
        s->weights += kiln_nbytes(p->t) + kiln_nbytes(p->half);
        s->grads += kiln_nbytes(kiln_grad(gpt_grad_leaf(s->m, i)));
        s->moments += kiln_nbytes(kiln_adam_m(s->t.opt, i)) + kiln_nbytes(kiln_adam_v(s->t.opt, i));
    }
    s->persistent = kiln_memory_persistent(s->ctx);
    return 0;
}

static void side_close(side *s) {
    trainer_free(&s->t);
    gpt_free(s->m);
    kiln_close(s->ctx);
    free(s->step_s);
}

/* One training step; its wall time goes to step_s[slot] when slot >= 0. */
static int side_step(side *s, int slot) {
    char err[1024];
    train_step_stats st;
    double t0 = progress_now();
    if (trainer_step(&s->t, &st, err, sizeof err)) return host_error("%s", err);
    if (slot >= 0) s->step_s[slot] = progress_now() - t0;
    s->last_loss = st.loss;
    return 0;
}

static void row_bytes(const char *what, size_t a, size_t b, const char *note) {
    printf("  %-22s %10.2f MiB %10.2f MiB", what, (double)a / 1048576.0, (double)b / 1048576.0);
    /* a ratio to almost nothing says nothing */
    if (a >= 4096)
        printf(" %9.2f", (double)b / (double)a);
    else
        printf(" %9s", "-");
    printf("   %s\n", note);
}

int cmd_bench_precision(int argc, char **argv) {
    bench_precision_options o = {.gpt = bench_gpt_defaults(), .steps = 20, .warmup_steps = 3,
                                 .device = -1, .backend = "cpu"};
    train_hparams *hp = &o.gpt.hp;
    const cli_opt own[] = {
        {.name = "--steps", .kind = CLI_INT, .target = &o.steps, .meta = "N",
         .help = "timed steps of each precision", .min = 1, .max = 1 << 20},
        {.name = "--warmup-steps", .kind = CLI_INT, .target = &o.warmup_steps, .meta = "N",
         .help = "untimed steps of each first", .min = 0, .max = 1 << 20},
        {.name = "--seed", .kind = CLI_U64, .target = &hp->seed, .meta = "N",
         .help = "seed of the init and the batches"},
        host_backend_option(&o.backend),
        host_device_option(&o.device),
    };
    cli_opt opts[BENCH_GPT_OPTIONS + sizeof own / sizeof own[0]];
    int n = bench_gpt_options(&o.gpt, own, (int)(sizeof own / sizeof own[0]), opts);
    const char *summary =
        "Trains the same GPT in fp32 and in fp16 (mixed precision: f16 weight copies,\n"
        "activations and gradients, f32 master weights and Adam moments, dynamic loss\n"
        "scaling) on one device, alternating their steps, and prints the device memory of\n"
        "weights, gradients, optimizer state and activations and the step time of each, with\n"
        "fp16/fp32 ratios. Defaults: nanoGPT's CPU config.";
    int rc = cli_parse("bench precision", summary, argc, argv, 3, opts, n);
    if (rc) return rc < 0 ? 1 : 0;
    if (bench_gpt_check(&o.gpt)) return 1;

    data_set *ds = NULL;
    side s[2];
    memset(s, 0, sizeof s);
    if (bench_gpt_data(&o.gpt, &ds)) return 1;
    rc = 1;
    if (side_open(&s[0], &o, ds, KILN_F32) || side_open(&s[1], &o, ds, KILN_F16)) goto done;
    host_say_device("bench precision", s[0].ctx);
    for (int k = 0; k < o.warmup_steps; k++)
        if (side_step(&s[0], -1) || side_step(&s[1], -1)) goto done;
    for (int k = 0; k < o.steps; k++) {
        /* which side goes first alternates too, so neither always follows the other */
        int first = k % 2;
        if (side_step(&s[first], k) || side_step(&s[1 - first], k)) goto done;
    }
    for (int i = 0; i < 2; i++) s[i].arena = kiln_memory_arena_peak(s[i].ctx);

    double tokens = (double)hp->batch * hp->block;
    double t32 = bench_median(s[0].step_s, o.steps), t16 = bench_median(s[1].step_s, o.steps);
    kiln_loss_scale_state ls = kiln_loss_scaler_state(s[1].t.scaler);
    printf("model: %d layers, %d heads, dim %d, block %d, batch %d: %.2fM weights; %d timed steps "
           "of each after %d, alternating\n", o.gpt.layers, o.gpt.heads, o.gpt.dim, hp->block, hp->batch,
           (double)gpt_param_count(s[0].m) / 1e6, o.steps, o.warmup_steps);
    printf("device: %s, %s\n\n", kiln_backend_name(s[0].ctx), kiln_device_name(s[0].ctx));
    printf("  %-22s %14s %14s %9s\n", "", "fp32", "fp16", "fp16/fp32");
    row_bytes("weights", s[0].weights, s[1].weights, "fp16: f32 masters + f16 working copies");
    row_bytes("gradients", s[0].grads, s[1].grads, "fp16: f16, on the working copies");
    row_bytes("optimizer state", s[0].moments, s[1].moments, "Adam m and v, f32 in both");
    size_t other0 = s[0].persistent - s[0].weights - s[0].grads - s[0].moments;
    size_t other1 = s[1].persistent - s[1].weights - s[1].grads - s[1].moments;
    row_bytes("other persistent", other0, other1, "optimizer scalars; fp16: f16 norm scratch, scaler flag");
    row_bytes("activations", s[0].arena, s[1].arena, "one step's arena peak: activations, their gradients");
    row_bytes("total", s[0].persistent + s[0].arena, s[1].persistent + s[1].arena, "");
    /* eval and decode in fp16 replace the f32 weights by f16 ones (gpt_set_precision) */
    size_t numel = (size_t)gpt_param_count(s[0].m);
    row_bytes("weights (eval, decode)", 4 * numel, 2 * numel, "no masters: f32 or f16 weights alone");
    printf("  %-22s %11.1f ms %11.1f ms %9.2f   median of %d\n", "step time", 1e3 * t32, 1e3 * t16, t16 / t32,
           o.steps);
    printf("  %-22s %14.0f %14.0f %9.2f\n", "tokens/s", tokens / t32, tokens / t16, t32 / t16);
    printf("  %-22s %14.4f %14.4f             after %d steps; fp16: loss scale %g, %" PRId64 " skipped\n",
           "training loss", s[0].last_loss, s[1].last_loss, o.warmup_steps + o.steps, ls.scale,
           ls.skipped_steps);
    rc = 0;
done:
    side_close(&s[1]);
    side_close(&s[0]);
    data_free(ds);
    return rc;
}
