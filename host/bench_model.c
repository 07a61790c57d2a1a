/* Whole-model figures of the GPT in host/gpt*.c at named sizes:
 *
 *   tiny         nanoGPT's CPU config as `kiln train` uses it: 4 layers, 4 heads, 128 wide,
 *                context 64, byte vocabulary (256); batch 12 x 64
 *   gpt2-small   GPT-2 small: 12 layers, 12 heads, 768 wide, context 1024, vocabulary 50257;
 *                the tokens per step are sized from the device's f32 ceiling (a CPU device
 *                gets a short context so a step takes about a second; a GPU gets up to
 *                8 x 1024), and the line says what was used
 *
 * A training step is what `kiln train` does per step, without reading anything back:
 * forward, loss, backward, clipped AdamW over every weight, zeroing the gradients; it is
 * timed on the device from the upload of the tokens to the last update. Its model FLOPs
 * are nanoGPT's (PaLM's) estimate: 6 N per token for the N weights that take part in
 * matrix products (every weight but the position table; the output layer shares the token
 * table) plus 12 L C T per token for attention's two products over context T, forward and
 * backward; MFU is that rate over the f32 FMA ceiling.
 *
 * Decoding: prefill of a prompt through the KV cache (tokens/s, and its model FLOPs, a
 * third of training's), then the latency of one more token at the prompt's end, which
 * reads every weight once: also given as GB/s of weights against copy bandwidth. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "gpt.h"

typedef struct model_size {
    const char *name;
    gpt_config cfg;
    int batch, context; /* 0: sized from the ceiling */
} model_size;

static const model_size model_sizes[] = {
    {"tiny", {4, 4, 128, 64, GPT_BYTE_VOCAB, GPT_DEFAULT_LN_EPS}, 12, 64},
    {"gpt2-small", {12, 12, 768, 1024, 50257, GPT_DEFAULT_LN_EPS}, 0, 0},
};

/* The weights that take part in matrix products: all but the position table. */
static double matmul_weights(const gpt_config *c) {
    gpt_param_spec *specs = malloc((size_t)gpt_param_specs(c, NULL) * sizeof *specs);
    if (!specs) return NAN;
    int n = gpt_param_specs(c, specs);
    double total = 0;
    for (int i = 0; i < n; i++)
        if (strcmp(specs[i].name, "wpe.weight")) total += (double)specs[i].shape[0] * (double)specs[i].shape[1];
    free(specs);
    return total;
}

/* Training FLOPs per token at context t. */
static double train_flops_per_token(const gpt_config *c, double n, int t) {
    return 6.0 * n + 12.0 * c->n_layer * c->n_embd * t;
}

/* Tokens per step for a step of about `target_s` at a quarter of the f32 ceiling, a power
 * of two from 64 to 8 x n_positions; context min(tokens, n_positions). */
static void size_batch(const bench_device *d, const model_size *s, double n, int quick, int *batch, int *context) {
    if (s->batch) {
        *batch = s->batch;
        *context = s->context;
        return;
    }
    double gflops = bench_ceiling_value(bench_find(d, "fma.f32"));
    if (!isfinite(gflops)) gflops = 50.0; /* unmeasured: assume a slow device */
    double target_s = quick ? 0.2 : 1.0;
    double want = target_s * 0.25 * gflops * 1e9 / train_flops_per_token(&s->cfg, n, 128);
    int tokens = quick ? 32 : 64;
    while (tokens * 2 <= want && tokens * 2 <= 8 * s->cfg.n_positions) tokens *= 2;
    *context = tokens < s->cfg.n_positions ? tokens : s->cfg.n_positions;
    *batch = tokens / *context;
}

/* ---- training ---- */

typedef struct train_work {
    gpt_model *m;
    kiln_adam *opt;
    kiln_tensor **params;
    int32_t *x, *y;
    int batch, context;
    kiln_tensor *loss;
} train_work;

static kiln_tensor *upload_tokens(kiln_ctx *ctx, const int32_t *ids, int batch, int context) {
    int64_t shape[2] = {batch, context};
    kiln_tensor *t = kiln_tensor_temp(ctx, KILN_I32, 2, shape);
    if (!t || kiln_upload(t, ids, (size_t)batch * (size_t)context * sizeof *ids)) return NULL;
    return t;
}

static int train_run(void *arg) {
    train_work *w = arg;
    kiln_ctx *ctx = w->m->ctx;
    kiln_tensor *ids = upload_tokens(ctx, w->x, w->batch, w->context);
    kiln_tensor *targets = ids ? upload_tokens(ctx, w->y, w->batch, w->context) : NULL;
    w->loss = targets ? gpt_loss(w->m, ids, targets, 0.0f, NULL) : NULL;
    kiln_adam_step_opts s = {0};
    s.lr = 1e-4f;
    s.clip_norm = 1.0f;
    if (!w->loss || kiln_backward(w->loss, 1.0f) || kiln_adam_step(w->opt, &s) ||
        kiln_zero_grad(w->params, w->m->n_params))
        return -1;
    return 0;
}

/* Random tokens give a loss of log(vocab) at initialisation; the steps before the check
 * (warm-up) train on the same batch, which lowers it. Far above, or not a number, means
 * the step computed something else. */
static int train_check(void *arg, char *err, size_t errlen) {
    train_work *w = arg;
    float loss;
    if (kiln_read_scalar(w->loss, &loss)) return snprintf(err, errlen, "reading the loss: %s", kiln_error_message()), -1;
    double at_init = log((double)w->m->cfg.vocab_size);
    if (!(loss > 0 && loss < at_init + 1.0))
        return snprintf(err, errlen, "the loss is %g, expected below %.2f", (double)loss, at_init + 1.0), -1;
    return 0;
}

/* ---- decoding ---- */

typedef struct decode_work {
    gpt_model *m;
    gpt_kv_cache *cache;
    const int32_t *ids;
    int start, count; /* the positions run: [start, start + count) */
    kiln_tensor *logits;
} decode_work;

static int decode_prepare(void *arg) {
    decode_work *w = arg;
    w->cache->len = w->start; /* the cache already holds the prompt up to start */
    return 0;
}

static int decode_run(void *arg) {
    decode_work *w = arg;
    w->logits = gpt_forward_cached(w->m, w->cache, w->ids + w->start, w->count);
    return w->logits ? 0 : -1;
}

static int decode_check(void *arg, char *err, size_t errlen) {
    decode_work *w = arg;
    float v;
    if (kiln_read_scalar(w->logits, &v)) return snprintf(err, errlen, "reading the logits: %s", kiln_error_message()), -1;
    if (!isfinite(v)) return snprintf(err, errlen, "the logits are not finite (%g)", (double)v), -1;
    return 0;
}

/* ---- figures ----
 * Each phase is timed once, as ms per run, into a scratch figure; the rows are rates
 * derived from it (value = per_ms / ms, so the spread's ends swap), or the time itself. */

static const struct {
    const char *key, *label;
    bench_unit unit;
} model_rows[] = {
    {"train.step", "train step", BENCH_MS},
    {"train.tokens", "train tokens", BENCH_TOKENS_PER_S},
    {"train.flops", "train FLOP/s (MFU)", BENCH_GFLOPS},
    {"prefill.tokens", "prefill tokens", BENCH_TOKENS_PER_S},
    {"prefill.flops", "prefill FLOP/s", BENCH_GFLOPS},
    {"decode.latency", "decode 1 token", BENCH_MS},
    {"decode.weights", "decode weight stream", BENCH_GBPS},
};
enum { ROW_STEP, ROW_TOKENS, ROW_FLOPS, ROW_PREFILL_TOKENS, ROW_PREFILL_FLOPS, ROW_LATENCY, ROW_WEIGHTS, ROWS };

static bench_figure scratch_figure(void) {
    bench_figure f = {0};
    f.unit = BENCH_MS;
    f.median = f.min = f.max = f.device_s = f.wall_s = f.pct = NAN;
    return f;
}

/* Adds row `row` of model `name` from the timed figure t: a copy of it when per_ms is 0,
 * else the rate per_ms / t. Relates it to `ceiling` (NULL: none; model FLOP/s are checked
 * against the FMA ceiling like a GEMM) and prints it. */
static void add_row(kiln_ctx *ctx, const bench_options *o, bench_device *d, const char *name, int row,
                    const char *shape, const bench_figure *t, double per_ms, const char *ceiling) {
    char key[48], label[64];
    snprintf(key, sizeof key, "%s.%s", name, model_rows[row].key);
    snprintf(label, sizeof label, "%s %s", name, model_rows[row].label);
    bench_figure *f = bench_add(d, BENCH_MODELS, key, label, model_rows[row].unit);
    if (!f) return;
    snprintf(f->shape, sizeof f->shape, "%s", shape);
    f->repeats = t->repeats;
    f->device_s = t->device_s;
    f->wall_s = t->wall_s;
    if (!isfinite(t->median)) {
        snprintf(f->note, sizeof f->note, "%s", t->note);
        f->error = row == ROW_STEP || row == ROW_PREFILL_TOKENS || row == ROW_LATENCY ? t->error : 0;
    } else if (per_ms == 0) {
        f->median = t->median, f->min = t->min, f->max = t->max;
    } else {
        f->median = per_ms / t->median, f->min = per_ms / t->max, f->max = per_ms / t->min;
    }
    if (ceiling && !strncmp(ceiling, "fma.", 4))
        bench_relate_compute(ctx, o, d, f, ceiling, 1);
    else if (ceiling)
        bench_relate(d, f, ceiling);
    bench_print_figure(stdout, f);
}

/* Rows [first, ROWS) of a model that could not go on, with the reason (counted once). */
static void rows_failed(kiln_ctx *ctx, const bench_options *o, bench_device *d, const char *name, int first,
                        const char *shape, const char *what) {
    bench_figure t = scratch_figure();
    bench_engine_failure(&t, what);
    for (int row = first; row < ROWS; row++) {
        add_row(ctx, o, d, name, row, shape, &t, 0, NULL);
        t.error = 0;
    }
}

static void bench_model(kiln_ctx *ctx, const bench_options *o, bench_device *d, const model_size *s) {
    const gpt_config *c = &s->cfg;
    const double n = matmul_weights(c);
    int batch, context;
    size_batch(d, s, n, o->quick, &batch, &context);
    const int tokens = batch * context;
    /* the prompt fills the training context, leaving room for one decoded token */
    const int prompt = context < c->n_positions ? context : c->n_positions - 1;
    char shape[64], pshape[64], lshape[64];
    snprintf(shape, sizeof shape, "batch %d x context %d", batch, context);
    snprintf(pshape, sizeof pshape, "prompt %d", prompt);
    snprintf(lshape, sizeof lshape, "at position %d", prompt);
    fprintf(stderr, "kiln bench: %s: model %s (%s)\n", d->id, s->name, shape);

    train_work tw = {0};
    decode_work dw = {0};
    tw.batch = batch;
    tw.context = context;
    tw.x = malloc((size_t)tokens * sizeof *tw.x);
    tw.y = malloc((size_t)tokens * sizeof *tw.y);
    for (int i = 0; tw.x && tw.y && i < tokens; i++) {
        tw.x[i] = (int32_t)(kiln_rng_u32(17, 1, (uint64_t)i) % (uint32_t)c->vocab_size);
        tw.y[i] = (int32_t)(kiln_rng_u32(17, 2, (uint64_t)i) % (uint32_t)c->vocab_size);
    }
    kiln_set_grad_enabled(ctx, 1);
    kiln_set_training(ctx, 1);
    tw.m = tw.x && tw.y ? gpt_new(ctx, c) : NULL;
    if (tw.m) tw.params = malloc((size_t)tw.m->n_params * sizeof *tw.params);
    for (int i = 0; tw.params && i < tw.m->n_params; i++) tw.params[i] = tw.m->params[i].t;
    kiln_adam_opts ao = kiln_adam_defaults();
    ao.beta2 = 0.95f;
    ao.weight_decay = 0.1f;
    ao.decoupled = 1;
    if (!tw.params || gpt_init(tw.m, 1337) || !(tw.opt = kiln_adam_new(ctx, tw.params, tw.m->n_params, &ao)) ||
        kiln_zero_grad(tw.params, tw.m->n_params)) {
        rows_failed(ctx, o, d, s->name, ROW_STEP, shape, "the model");
        goto done;
    }
    for (int i = 0; i < tw.m->n_params; i++) kiln_adam_set_decay(tw.opt, i, tw.m->params[i].spec.decay);

    /* a training step */
    bench_figure t = scratch_figure();
    bench_work w = {NULL, train_run, train_check, &tw, 1};
    bench_time(ctx, &w, 1, o->quick ? 2 : 3, &t);
    add_row(ctx, o, d, s->name, ROW_STEP, shape, &t, 0, NULL);
    add_row(ctx, o, d, s->name, ROW_TOKENS, shape, &t, tokens * 1e3, NULL);
    add_row(ctx, o, d, s->name, ROW_FLOPS, shape, &t, train_flops_per_token(c, n, context) * tokens * 1e3 * 1e-9, "fma.f32");

    /* decoding with the KV cache (no gradients, no dropout) */
    kiln_set_grad_enabled(ctx, 0);
    kiln_set_training(ctx, 0);
    dw.m = tw.m;
    dw.ids = tw.x;
    if (!(dw.cache = gpt_kv_new(tw.m))) {
        rows_failed(ctx, o, d, s->name, ROW_PREFILL_TOKENS, pshape, "the KV cache");
        goto done;
    }
    dw.start = 0;
    dw.count = prompt;
    t = scratch_figure();
    bench_work pw = {decode_prepare, decode_run, decode_check, &dw, 1};
    bench_time(ctx, &pw, 1, o->quick ? 2 : 3, &t);
    add_row(ctx, o, d, s->name, ROW_PREFILL_TOKENS, pshape, &t, prompt * 1e3, NULL);
    add_row(ctx, o, d, s->name, ROW_PREFILL_FLOPS, pshape, &t,
            train_flops_per_token(c, n, prompt) / 3 * prompt * 1e3 * 1e-9, "fma.f32");

    /* One token at the prompt's end: the cache holds the prompt (from the last prefill
     * run), and each run decodes position `prompt` again. */
    dw.start = prompt;
    dw.count = 1;
    t = scratch_figure();
    bench_work lw = {decode_prepare, decode_run, decode_check, &dw, 1};
    bench_time(ctx, &lw, 2, o->quick ? 3 : 10, &t);
    add_row(ctx, o, d, s->name, ROW_LATENCY, lshape, &t, 0, NULL);
    add_row(ctx, o, d, s->name, ROW_WEIGHTS, lshape, &t, 4.0 * n * 1e3 * 1e-9, "copy");

done:
    kiln_step_reset(ctx);
    gpt_kv_free(dw.cache);
    kiln_adam_free(tw.opt);
    gpt_free(tw.m);
    free(tw.params);
    free(tw.x), free(tw.y);
    kiln_set_grad_enabled(ctx, 1);
    kiln_set_training(ctx, 1);
}

void bench_models(kiln_ctx *ctx, const bench_options *o, bench_device *d) {
    fprintf(stderr, "kiln bench: %s: models\n", d->id);
    bench_print_section(stdout, BENCH_MODELS);
    if (o->tiny) bench_model(ctx, o, d, &model_sizes[0]);
    if (o->gpt2_small) bench_model(ctx, o, d, &model_sizes[1]);
}
