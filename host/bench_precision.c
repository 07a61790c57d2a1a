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

#include "cli.h"
#include "commands.h"
#include "device.h"
#include "precision.h"
#include "progress.h"
#include "trainer.h"

typedef struct side {
    kiln_dtype dtype;
    kiln_ctx *ctx;
    gpt_model *m;
    trainer t;
    size_t weights, grads, moments, persistent, arena; /* bytes */
    double *step_s;  /* wall seconds of each timed step */
    double last_loss;
} side;

typedef struct bench_opts {
    int layers, heads, dim, steps, warmup_steps, device;
    const char *backend;
    train_hparams hp;
} bench_opts;

static int compare_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, compare_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Opens the device and builds one precision's model and trainer. */
static int side_open(side *s, const bench_opts *o, const data_set *ds, kiln_dtype dtype) {
    char err[1024];
    memset(s, 0, sizeof *s);
    s->dtype = dtype;
    if (!(s->ctx = host_open_device(o->backend, o->device))) return 1;
    if (host_check_precision(s->ctx, dtype)) return 1;
    gpt_config cfg = {o->layers, o->heads, o->dim, o->hp.block, GPT_BYTE_VOCAB, GPT_DEFAULT_LN_EPS};
    s->m = gpt_new(s->ctx, &cfg);
    if (!s->m || gpt_init(s->m, o->hp.seed)) return host_engine_error("cannot create the model");
    train_hparams hp = o->hp;
    hp.precision = dtype;
    if (trainer_init(&s->t, s->m, ds, &hp, err, sizeof err)) return host_error("%s", err);
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
    bench_opts o = {4, 4, 128, 20, 3, -1, "cpu", {0}};
    train_hparams *hp = &o.hp;
    *hp = train_nanogpt_hparams();
    hp->steps = 1000; /* the lr schedule's length, as before: the timed steps all fall in its warmup */
    cli_opt opts[] = {
        {"--layers", CLI_INT, &o.layers, "N", "transformer blocks", 1, 1024, 0},
        {"--heads", CLI_INT, &o.heads, "N", "attention heads", 1, 1024, 0},
        {"--dim", CLI_INT, &o.dim, "N", "embedding width", 1, 65536, 0},
        {"--block", CLI_INT, &hp->block, "N", "context length", 1, 1 << 20, 0},
        {"--batch", CLI_INT, &hp->batch, "N", "sequences per step", 1, 1 << 20, 0},
        {"--steps", CLI_INT, &o.steps, "N", "timed steps of each precision", 1, 1 << 20, 0},
        {"--warmup-steps", CLI_INT, &o.warmup_steps, "N", "untimed steps of each first", 0, 1 << 20, 0},
        {"--seed", CLI_U64, &hp->seed, "N", "seed of the init and the batches", 0, 0, 0},
        {"--backend", CLI_STRING, &o.backend, "NAME", HOST_BACKEND_HELP, 0, 0, 0},
        {"--device", CLI_INT, &o.device, "N", HOST_DEVICE_HELP, -1, 1000, 0},
    };
    int n = (int)(sizeof opts / sizeof opts[0]);
    const char *summary =
        "Trains the same GPT in fp32 and in fp16 (mixed precision: f16 weight copies,\n"
        "activations and gradients, f32 master weights and Adam moments, dynamic loss\n"
        "scaling) on one device, alternating their steps, and prints the device memory of\n"
        "weights, gradients, optimizer state and activations and the step time of each, with\n"
        "fp16/fp32 ratios. Defaults: nanoGPT's CPU config.";
    int rc = cli_parse("bench precision", summary, argc, argv, 3, opts, n);
    if (rc) return rc < 0 ? 1 : 0;
    if (o.dim % o.heads) return host_error("--heads %d does not divide --dim %d", o.heads, o.dim);

    char err[1024];
    /* 1 MiB of random bytes: enough windows that batches do not repeat */
    enum { DATA_BYTES = 1 << 20 };
    uint8_t *bytes = malloc(DATA_BYTES);
    data_set *ds = NULL;
    side s[2];
    memset(s, 0, sizeof s);
    rc = 1;
    if (!bytes) return host_error("out of host memory");
    for (int i = 0; i < DATA_BYTES; i++) bytes[i] = (uint8_t)(kiln_rng_u32(hp->seed, 7, (uint64_t)i) & 0xff);
    if (data_from_bytes(bytes, DATA_BYTES, &ds, err, sizeof err)) {
        host_error("%s", err);
        goto done;
    }
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
    double t32 = median(s[0].step_s, o.steps), t16 = median(s[1].step_s, o.steps);
    kiln_loss_scale_state ls = kiln_loss_scaler_state(s[1].t.scaler);
    printf("model: %d layers, %d heads, dim %d, block %d, batch %d: %.2fM weights; %d timed steps "
           "of each after %d, alternating\n", o.layers, o.heads, o.dim, hp->block, hp->batch,
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
    free(bytes);
    return rc;
}
