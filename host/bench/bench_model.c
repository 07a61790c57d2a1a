/* Whole-model figures of the GPT in model/gpt*.c, trained by model/trainer.c, at named sizes:
 *
 *   tiny         nanoGPT's CPU config as `kiln train` uses it: 4 layers, 4 heads, 128 wide,
 *                context 64, byte vocabulary (256); batch 12 x 64
 *   gpt2-small   GPT-2 small: 12 layers, 12 heads, 768 wide, context 1024, vocabulary 50257;
 *                the tokens per step are sized from the device's f32 ceiling (a CPU device
 *                gets a short context so a step takes about a second; a GPU gets up to
 *                8 x 1024), and the rows say what was used
 *   smollm2-135m SmolLM2-135M's shape (HF's config.json of HuggingFaceTB/SmolLM2-135M): the
 *                Llama family's block (RMSNorm, rotary positions with base 100000, SwiGLU,
 *                no biases), 30 layers, 9 heads over 3 key/value heads of 64, 576 wide, MLP
 *                1536, vocabulary 49152, tied, context 8192; tokens per step as gpt2-small
 *
 * in each precision asked for: fp32, then fp16 (mixed precision: f16 weights, activations
 * and gradients, f32 masters and moments, dynamic loss scaling), on the same weights.
 *
 * A training step is exactly `kiln train`'s (trainer_accumulate + trainer_update_scaled:
 * forward, loss, backward, clipped AdamW, the reads of the loss, the gradient norm and in
 * fp16 the overflow flag), timed on the device from the upload of the tokens to the last
 * read. Its model FLOPs are nanoGPT's (PaLM's) estimate: 6 N per token for the N weights
 * that take part in matrix products (every weight but the position table; the output layer
 * shares the token table) plus 12 L C T per token for attention's two products over context
 * T, forward and backward. MFU is that rate over the FMA ceiling of the precision (the
 * ceiling of f16 GEMMs in fp16: see bench_matmul_ceiling).
 *
 * Decoding: prefill of a prompt through the KV cache (tokens/s, and its model FLOPs, a
 * third of training's), then the latency of one more token at the prompt's end, which
 * reads every weight once: also given as GB/s of weights against copy bandwidth. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "model/gpt/gpt.h"
#include "model/trainer.h"

typedef struct model_size {
    const char *name;
    gpt_config cfg;
    int batch, context; /* 0: sized from the ceiling */
} model_size;

static const model_size model_sizes[BENCH_MODEL_SIZES] = {
    {.name = "tiny",
     .cfg = {.n_layer = 4, .n_head = 4, .n_embd = 128, .n_positions = 64, .vocab_size = GPT_BYTE_VOCAB,
             .ln_eps = GPT_DEFAULT_LN_EPS},
     .batch = 12, .context = 64},
    {.name = "gpt2-small",
     .cfg = {.n_layer = 12, .n_head = 12, .n_embd = 768, .n_positions = 1024, .vocab_size = 50257,
             .ln_eps = GPT_DEFAULT_LN_EPS}},
    {.name = "smollm2-135m",
     .cfg = {.n_layer = 30, .n_head = 9, .n_kv_head = 3, .n_embd = 576, .n_ffn = 1536, .n_positions = 8192,
             .vocab_size = 49152, .ln_eps = 1e-5f, .position = GPT_POSITION_ROPE,
             .block = {.norm_type = BLOCK_NORM_TYPE_RMSNORM, .mlp = BLOCK_MLP_SWIGLU, .bias = BLOCK_BIAS_NONE,
                       .rope = 1, .rope_base = 100000.0f, .rope_layout = KILN_ROPE_HALF}}},
};

const char *bench_model_name(int size) { return model_sizes[size].name; }
const gpt_config *bench_model_config(int size) { return &model_sizes[size].cfg; }

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
        /* a --quick run is a smoke test: one sequence (the rows say so) */
        *batch = quick ? 1 : s->batch;
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

/* ---- training: one step of `kiln train` ---- */

typedef struct train_work {
    trainer t;
    double loss;
    int skipped; /* timed steps the loss scaler skipped (an overflow in fp16) */
} train_work;

static int train_run(void *arg) {
    train_work *w = arg;
    char err[512];
    double grad_norm;
    int skipped = 0;
    if (trainer_accumulate(&w->t, w->t.x, w->t.y, w->t.hp.batch, 1.0f, &w->loss, err, sizeof err) ||
        trainer_update_scaled(&w->t, w->t.hp.lr, &grad_norm, &skipped, err, sizeof err))
        return -1; /* the engine's message is still set */
    w->skipped += skipped;
    return 0;
}

/* Random tokens give a loss of log(vocab) at initialisation; the steps before the check
 * (warm-up, or the other precision's) train on the same batch, which lowers it. Far above,
 * or not a number, means the step computed something else. */
static int train_check(void *arg, char *err, size_t errlen) {
    train_work *w = arg;
    double at_init = log((double)w->t.m->cfg.vocab_size);
    if (!(w->loss > 0 && w->loss < at_init + 1.0))
        return snprintf(err, errlen, "the loss is %g, expected below %.2f", w->loss, at_init + 1.0), -1;
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
    return bench_check_logits(((decode_work *)arg)->logits, err, errlen);
}

/* ---- figures ----
 * Each phase is timed once, as ms per run, into a scratch figure; the rows are rates
 * derived from it (value = per_ms / ms, so the spread's ends swap), or the time itself. */

static const struct {
    const char *key, *label;
    bench_unit unit;
} model_rows[] = {
    {.key = "train.step", .label = "train step", .unit = BENCH_MS},
    {.key = "train.tokens", .label = "train tokens", .unit = BENCH_TOKENS_PER_S},
    {.key = "train.flops", .label = "train FLOP/s", .unit = BENCH_GFLOPS}, /* its percentage is the MFU */
    {.key = "prefill.tokens", .label = "prefill tokens", .unit = BENCH_TOKENS_PER_S},
    {.key = "prefill.flops", .label = "prefill FLOP/s", .unit = BENCH_GFLOPS},
    {.key = "decode.latency", .label = "decode latency", .unit = BENCH_MS},
    {.key = "decode.weights", .label = "decode weights", .unit = BENCH_GBPS}, /* the weights streamed per token */
};
enum { ROW_STEP, ROW_TOKENS, ROW_FLOPS, ROW_PREFILL_TOKENS, ROW_PREFILL_FLOPS, ROW_LATENCY, ROW_WEIGHTS, ROWS };

static bench_figure scratch_figure(void) {
    return (bench_figure){.unit = BENCH_MS, .median = NAN, .min = NAN, .max = NAN, .device_s = NAN,
                          .wall_s = NAN, .pct = NAN};
}

/* One model in one precision: "gpt2-small", "fp16" -> keys "gpt2-small.fp16.train.step". */
typedef struct model_run {
    kiln_ctx *ctx;
    const bench_options *o;
    bench_device *d;
    const char *name, *precision;
} model_run;

/* Adds row `row` from the timed figure t: a copy of it when per_ms is 0, else the rate
 * per_ms / t. Relates it to `ceiling` (NULL: none; model FLOP/s are checked against their
 * FMA ceiling like a GEMM) and prints it. */
static void add_row(const model_run *r, int row, const char *shape, const bench_figure *t, double per_ms,
                    const char *ceiling) {
    char key[48], label[64];
    snprintf(key, sizeof key, "%s.%s.%s", r->name, r->precision, model_rows[row].key);
    snprintf(label, sizeof label, "%s %s %s", r->name, r->precision, model_rows[row].label);
    bench_figure *f = bench_add(r->d, BENCH_MODELS, key, label, model_rows[row].unit);
    if (!f) return;
    snprintf(f->shape, sizeof f->shape, "%s", shape);
    f->repeats = t->repeats;
    f->device_s = t->device_s;
    f->wall_s = t->wall_s;
    snprintf(f->note, sizeof f->note, "%s", t->note);
    if (!isfinite(t->median)) {
        /* one failure, counted on the row that was measured */
        f->error = row == ROW_STEP || row == ROW_PREFILL_TOKENS || row == ROW_LATENCY ? t->error : 0;
    } else if (per_ms == 0) {
        f->median = t->median, f->min = t->min, f->max = t->max;
    } else {
        f->median = per_ms / t->median, f->min = per_ms / t->max, f->max = per_ms / t->min;
    }
    if (ceiling && !strncmp(ceiling, "fma.", 4))
        bench_relate_compute(r->ctx, r->o, r->d, f, ceiling, 1);
    else if (ceiling)
        bench_relate(r->d, f, ceiling);
    bench_print_figure(stdout, f);
}

/* Rows [first, ROWS) that could not be measured, for the reason in `why` (an error, if it
 * is one, counted once). */
static void rows_failed(const model_run *r, int first, const char *shape, bench_figure why) {
    for (int row = first; row < ROWS; row++) {
        add_row(r, row, shape, &why, 0, NULL);
        why.error = 0;
    }
}

/* The engine's last failure as the reason for rows_failed. */
static bench_figure engine_reason(const char *what) {
    bench_figure why = scratch_figure();
    bench_engine_failure(&why, what);
    return why;
}

/* The prompt and the decoded token of a model of c: a fresh draw, as long as needed; NULL
 * out of host memory. */
static int32_t *draw_prompt(const gpt_config *c, int prompt) {
    int32_t *ids = malloc((size_t)(prompt + 1) * sizeof *ids);
    for (int i = 0; ids && i <= prompt; i++) ids[i] = (int32_t)(kiln_rng_u32(17, 3, (uint64_t)i) % (uint32_t)c->vocab_size);
    return ids;
}

/* Sets up tw's trainer for m in precision dt on a random batch and times its steps: the
 * rows ROW_STEP to ROW_FLOPS. -1 (those rows and the rest failed) when training cannot be
 * set up. */
static int time_train_rows(const model_run *r, const gpt_config *c, gpt_model *m, kiln_dtype dt, int batch,
                         int context, double n, train_work *tw, const char *shape) {
    const int tokens = batch * context;
    train_hparams hp = {.batch = batch, .block = context, .grad_accum = 1, .steps = 1000, .warmup = 0,
                        .lr = 1e-4f, .min_lr = 1e-5f, .beta1 = 0.9f, .beta2 = 0.95f, .weight_decay = 0.1f,
                        .clip = 1.0f, .dropout = 0.0f, .seed = 1337, .precision = dt};
    /* A first loss scale below kiln train's 2^16: a step that overflows skips its update,
     * which makes it cheaper, and the few timed steps should all be whole ones. */
    hp.loss_scale = kiln_loss_scale_defaults();
    hp.loss_scale.init = 1024;
    char err[512];
    if (trainer_init(&tw->t, m, NULL, &hp, err, sizeof err)) {
        rows_failed(r, ROW_STEP, shape, engine_reason("setting up training"));
        return -1;
    }
    for (int i = 0; i < tokens; i++) {
        tw->t.x[i] = (int32_t)(kiln_rng_u32(17, 1, (uint64_t)i) % (uint32_t)c->vocab_size);
        tw->t.y[i] = (int32_t)(kiln_rng_u32(17, 2, (uint64_t)i) % (uint32_t)c->vocab_size);
    }
    bench_figure t = scratch_figure();
    bench_work w = {.run = train_run, .check = train_check, .arg = tw, .amount = 1};
    /* whole steps are long: 3 timed (1 in a --quick run) after one warm-up */
    const int steps = r->o->quick ? 1 : 3;
    if (bench_time(r->ctx, &w, 1, steps, &t) == 0 && tw->skipped)
        snprintf(t.note, sizeof t.note, "the loss scaler skipped %d of the steps (overflow)", tw->skipped);
    add_row(r, ROW_STEP, shape, &t, 0, NULL);
    add_row(r, ROW_TOKENS, shape, &t, tokens * 1e3, NULL);
    add_row(r, ROW_FLOPS, shape, &t, train_flops_per_token(c, n, context) * tokens * 1e3 * 1e-9,
            bench_matmul_ceiling(r->d, dt));
    return 0;
}

/* Decoding with the KV cache, on the weights the forward pass reads in this precision: the
 * prompt's prefill, then one token at its end (rows ROW_PREFILL_TOKENS to ROW_WEIGHTS).
 * Leaves grad and training off and dw->cache for the caller to free. */
static void time_decode_rows(const model_run *r, const gpt_config *c, decode_work *dw, int prompt, double n,
                          const char *ceiling) {
    char pshape[64], lshape[64];
    snprintf(pshape, sizeof pshape, "prompt %d", prompt);
    snprintf(lshape, sizeof lshape, "at position %d", prompt);
    kiln_set_grad_enabled(r->ctx, 0);
    kiln_set_training(r->ctx, 0);
    if (!(dw->cache = gpt_kv_new(dw->m))) {
        rows_failed(r, ROW_PREFILL_TOKENS, pshape, engine_reason("the KV cache"));
        return;
    }
    dw->start = 0;
    dw->count = prompt;
    bench_figure t = scratch_figure();
    bench_work pw = {.prepare = decode_prepare, .run = decode_run, .check = decode_check, .arg = dw,
                      .amount = 1};
    bench_time(r->ctx, &pw, 1, r->o->quick ? 1 : 3, &t);
    add_row(r, ROW_PREFILL_TOKENS, pshape, &t, prompt * 1e3, NULL);
    add_row(r, ROW_PREFILL_FLOPS, pshape, &t, train_flops_per_token(c, n, prompt) / 3 * prompt * 1e3 * 1e-9, ceiling);

    /* One token at the prompt's end: the cache holds the prompt (from the last prefill
     * run), and each run decodes position `prompt` again. */
    dw->start = prompt;
    dw->count = 1;
    t = scratch_figure();
    bench_work lw = {.prepare = decode_prepare, .run = decode_run, .check = decode_check, .arg = dw,
                      .amount = 1};
    bench_time(r->ctx, &lw, r->o->quick ? 1 : 2, r->o->quick ? 3 : 10, &t);
    add_row(r, ROW_LATENCY, lshape, &t, 0, NULL);
    add_row(r, ROW_WEIGHTS, lshape, &t, (double)kiln_dtype_size(dw->m->dtype) * n * 1e3 * 1e-9, "copy");
}

/* Training and decoding of model m in precision dt. */
static void bench_precision(const model_run *r, const model_size *s, gpt_model *m, kiln_dtype dt, int batch,
                            int context, double n) {
    kiln_ctx *ctx = r->ctx;
    const gpt_config *c = &s->cfg;
    /* the prompt fills the training context, leaving room for one decoded token */
    const int prompt = context < c->n_positions ? context : c->n_positions - 1;
    char shape[64];
    snprintf(shape, sizeof shape, "batch %d x context %d", batch, context);
    if (!kiln_supports_dtype(ctx, dt)) {
        bench_figure why = scratch_figure();
        bench_not_measured(&why, 0, "the device cannot store f16");
        rows_failed(r, ROW_STEP, shape, why);
        return;
    }
    fprintf(stderr, "kiln bench: %s: model %s %s (%s)\n", r->d->id, s->name, r->precision, shape);
    train_work tw = {0};
    decode_work dw = {.m = m};
    int32_t *ids = draw_prompt(c, prompt);
    if (!ids) {
        bench_figure why = scratch_figure();
        bench_not_measured(&why, 1, "out of host memory");
        rows_failed(r, ROW_STEP, shape, why);
        return;
    }
    dw.ids = ids;
    if (time_train_rows(r, c, m, dt, batch, context, n, &tw, shape) == 0) {
        time_decode_rows(r, c, &dw, prompt, n, bench_matmul_ceiling(r->d, dt));
        kiln_step_reset(ctx);
        gpt_kv_free(dw.cache);
        trainer_free(&tw.t);
        kiln_set_grad_enabled(ctx, 1);
        kiln_set_training(ctx, 1);
    }
    free(ids);
}

static void bench_model(kiln_ctx *ctx, const bench_options *o, bench_device *d, const model_size *s) {
    const double n = matmul_weights(&s->cfg);
    int batch, context;
    size_batch(d, s, n, o->quick, &batch, &context);
    model_run r = {.ctx = ctx, .o = o, .d = d, .name = s->name, .precision = "fp32"};
    char shape[64];
    snprintf(shape, sizeof shape, "batch %d x context %d", batch, context);
    gpt_model *m = gpt_new(ctx, &s->cfg);
    if (!m || gpt_init(m, 1337)) {
        /* every row of every precision asked for says why (an error counted once) */
        bench_figure why = engine_reason("the model");
        for (int p = 0; p < 2; p++) {
            if (!(p ? o->fp16 : o->fp32)) continue;
            r.precision = p ? "fp16" : "fp32";
            rows_failed(&r, ROW_STEP, shape, why);
            why.error = 0;
        }
        gpt_free(m);
        return;
    }
    /* fp32 first: fp16 training turns the model to mixed precision for good */
    if (o->fp32) bench_precision(&r, s, m, KILN_F32, batch, context, n);
    r.precision = "fp16";
    if (o->fp16) bench_precision(&r, s, m, KILN_F16, batch, context, n);
    gpt_free(m);
}

void bench_models(kiln_ctx *ctx, const bench_options *o, bench_device *d) {
    fprintf(stderr, "kiln bench: %s: models\n", d->id);
    bench_print_section(stdout, BENCH_MODELS);
    for (int i = 0; i < BENCH_MODEL_SIZES; i++)
        if (o->sizes[i]) bench_model(ctx, o, d, &model_sizes[i]);
}
