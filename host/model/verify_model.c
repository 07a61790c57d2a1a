/* The whole-model checks of `kiln verify` (model/verify_model.h): a small GPT (GPT-2's block,
 * and the Llama family's) built on the device and on the CPU from the same seed, then one
 * training step and one greedy decode compared. */
#include "model/verify_model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/gpt/gpt.h"
#include "model/trainer.h"

/* Big enough to run every kind of kernel a GPT uses, with ragged sizes (dim 48 over 3 heads
 * of 16, 4x MLP of 192, vocabulary 256), small enough for the quick check. */
static const gpt_config MODEL = {.n_layer = 2, .n_head = 3, .n_embd = 48, .n_positions = 48,
                                 .vocab_size = GPT_BYTE_VOCAB, .ln_eps = GPT_DEFAULT_LN_EPS};
/* The Llama family's block with every option at once: RMSNorm, rotary positions, SwiGLU,
 * grouped-query attention (4 query heads over 2 key/value heads, each 16 wide: not dim /
 * heads), Qwen2's q/k/v biases, Qwen3's q/k norm, an untied head. */
static const gpt_config LLAMA = {.n_layer = 2, .n_head = 4, .n_embd = 48, .n_positions = 48,
                                 .vocab_size = GPT_BYTE_VOCAB, .ln_eps = GPT_DEFAULT_LN_EPS,
                                 .block = {.norm_type = BLOCK_NORM_TYPE_RMSNORM, .mlp = BLOCK_MLP_SWIGLU,
                                           .bias = BLOCK_BIAS_QKV, .qk_norm = 1, .rope_layout = KILN_ROPE_HALF},
                                 .n_kv_head = 2, .head_dim = 16, .n_ffn = 80, .untied = 1,
                                 .position = GPT_POSITION_ROPE};
enum { ROWS = 2, BLOCK = 24, PROMPT = 8, DECODE = 32 };
static const uint64_t SEED = 20261127;

/* The model of config `model` on ctx, initialised from SEED (the init draws from the counter
 * RNG on the host: the same weights on every backend). NULL with the engine's error set. */
static gpt_model *small_gpt(kiln_ctx *ctx, const gpt_config *model) {
    gpt_config cfg = *model;
    char err[200];
    if (gpt_config_check(&cfg, err, sizeof err)) {
        kiln_set_error(KILN_ERR_ARGUMENT, "verify: the check's model: %s", err);
        return NULL;
    }
    gpt_model *m = gpt_new(ctx, &cfg);
    if (m && gpt_init(m, SEED) != KILN_OK) {
        gpt_free(m);
        return NULL;
    }
    return m;
}

static float *download(const kiln_tensor *t) {
    int64_t n = kiln_numel(t);
    float *v = malloc((size_t)(n > 0 ? n : 1) * sizeof *v);
    if (v && kiln_download_f32(t, v, n) == KILN_OK) return v;
    if (!v) kiln_set_error(KILN_ERR_MEMORY, "verify: out of host memory");
    free(v);
    return NULL;
}

/* Compares tensor d (device) with c (cpu) as `what`; KILN_OK, or the error of a download. */
static kiln_status compare_tensors(kiln_verify_result *r, const char *what, const kiln_tensor *c,
                                   const kiln_tensor *d, double tol) {
    float *a = download(c), *b = a ? download(d) : NULL;
    kiln_status st = b ? KILN_OK : kiln_error_status();
    if (b) kiln_verify_compare(r, what, a, b, kiln_numel(c), tol);
    free(a), free(b);
    return st;
}

/* ---- one training step ---- */

typedef struct side {
    gpt_model *m;
    trainer t;
    int ready;
} side;

static kiln_status side_open(side *s, kiln_ctx *ctx, const gpt_config *model, kiln_dtype precision) {
    memset(s, 0, sizeof *s);
    if (!(s->m = small_gpt(ctx, model))) return kiln_error_status();
    train_hparams hp = train_nanogpt_hparams();
    hp.batch = ROWS, hp.block = BLOCK, hp.steps = 1, hp.warmup = 0, hp.precision = precision;
    char err[256];
    if (trainer_init(&s->t, s->m, NULL, &hp, err, sizeof err))
        return kiln_set_error(KILN_ERR_STATE, "verify: the check's trainer: %s", err);
    s->ready = 1;
    return KILN_OK;
}

static void side_close(side *s) {
    if (s->ready) trainer_free(&s->t);
    gpt_free(s->m);
    memset(s, 0, sizeof *s);
}

/* The compared quantities, in order: the loss, every weight's gradient (the f16 copy's, in
 * f16: loss-scaled like the CPU's, by the same scale), every weight after the clipped AdamW
 * update from the same gradients (the f32 masters). Tolerances: 100x and more the errors
 * measured on lavapipe and PoCL. */
static kiln_status train_step_of(const gpt_config *model, kiln_ctx *dev, kiln_ctx *cpu, kiln_dtype precision,
                                 kiln_verify_result *r) {
    int f16 = precision == KILN_F16;
    double loss_tol = f16 ? 1e-6 : 1e-10, grad_tol = f16 ? 1e-4 : 1e-8, weight_tol = 1e-10;
    int32_t x[ROWS * BLOCK], y[ROWS * BLOCK];
    for (int i = 0; i < ROWS * BLOCK; i++) {
        x[i] = (int32_t)(kiln_rng_u32(SEED, 1, (uint64_t)i) % GPT_BYTE_VOCAB);
        y[i] = (int32_t)(kiln_rng_u32(SEED, 2, (uint64_t)i) % GPT_BYTE_VOCAB);
    }
    side c, d;
    kiln_status st = side_open(&c, cpu, model, precision);
    if (st == KILN_OK) st = side_open(&d, dev, model, precision);
    char err[256] = "";
    double loss_c = 0, loss_d = 0, norm_c, norm_d;
    int skipped_c = 0, skipped_d = 0;
    if (st == KILN_OK && (trainer_accumulate(&c.t, x, y, ROWS, 1.0f, &loss_c, err, sizeof err) ||
                          trainer_accumulate(&d.t, x, y, ROWS, 1.0f, &loss_d, err, sizeof err)))
        st = kiln_set_error(KILN_ERR_DEVICE, "verify: the training step: %s", err);
    if (st == KILN_OK) {
        float lc = (float)loss_c, ld = (float)loss_d;
        kiln_verify_compare(r, "loss", &lc, &ld, 1, loss_tol);
    }
    for (int i = 0; st == KILN_OK && i < c.m->n_params; i++) {
        char what[96];
        snprintf(what, sizeof what, "grad %s", c.m->params[i].spec.name);
        kiln_tensor *gc = kiln_grad(gpt_grad_leaf(c.m, i)), *gd = kiln_grad(gpt_grad_leaf(d.m, i));
        if (!gc || !gd) {
            r->verdict = KILN_VERIFY_FAIL;
            snprintf(r->message, sizeof r->message, "%s: no gradient on %s", what, gc ? "the device" : "the cpu");
            break;
        }
        st = compare_tensors(r, what, gc, gd, grad_tol);
        /* the update then starts from the CPU's gradients on both sides: an AdamW step
         * divides each gradient by its own magnitude, so a gradient that is zero in exact
         * arithmetic (the key bias's: softmax ignores a constant shift) is rounding noise
         * whose sign, different on each device, would decide its weight's step */
        float *g = st == KILN_OK ? download(gc) : NULL;
        if (st == KILN_OK && (!g || kiln_upload_f32(gd, g, kiln_numel(gc)) != KILN_OK)) st = kiln_error_status();
        free(g);
    }
    if (st == KILN_OK && (trainer_update_scaled(&c.t, c.t.hp.lr, &norm_c, &skipped_c, err, sizeof err) ||
                          trainer_update_scaled(&d.t, d.t.hp.lr, &norm_d, &skipped_d, err, sizeof err)))
        st = kiln_set_error(KILN_ERR_DEVICE, "verify: the optimizer step: %s", err);
    if (st == KILN_OK && skipped_c != skipped_d) {
        r->verdict = KILN_VERIFY_FAIL;
        snprintf(r->message, sizeof r->message, "the %s skipped the step as an overflow, the %s did not",
                 skipped_d ? "device" : "cpu", skipped_d ? "cpu" : "device");
    }
    for (int i = 0; st == KILN_OK && i < c.m->n_params; i++) {
        char what[96];
        snprintf(what, sizeof what, "adamw %s", c.m->params[i].spec.name);
        st = compare_tensors(r, what, c.m->params[i].t, d.m->params[i].t, weight_tol);
    }
    side_close(&c);
    side_close(&d);
    kiln_step_reset(cpu);
    kiln_step_reset(dev);
    return st;
}

/* ---- greedy decoding with the KV cache ---- */

static int argmax(const float *v, int n) {
    int best = 0;
    for (int i = 1; i < n; i++)
        if (v[i] > v[best]) best = i;
    return best;
}

/* Both sides decode DECODE tokens after a fixed prompt, fed the CPU's choice each step (so
 * one near-tie cannot derail the rest); every step's logits are compared, and the device's
 * argmax must be the CPU's unless the two logits tie within 1e-5. */
static kiln_status greedy_decode_of(const gpt_config *model, kiln_ctx *dev, kiln_ctx *cpu, kiln_verify_result *r) {
    gpt_model *mc = small_gpt(cpu, model), *md = mc ? small_gpt(dev, model) : NULL;
    gpt_kv_cache *kc = md ? gpt_kv_new(mc) : NULL, *kd = kc ? gpt_kv_new(md) : NULL;
    kiln_status st = kd ? KILN_OK : kiln_error_status();
    kiln_ctx *ctxs[2] = {cpu, dev};
    int grad[2], training[2];
    for (int s = 0; s < 2; s++) {
        grad[s] = kiln_grad_enabled(ctxs[s]), training[s] = kiln_training(ctxs[s]);
        kiln_set_grad_enabled(ctxs[s], 0), kiln_set_training(ctxs[s], 0);
    }
    int32_t ids[PROMPT];
    for (int i = 0; i < PROMPT; i++) ids[i] = (int32_t)"kiln ver"[i];
    int n = PROMPT;
    for (int step = 0; st == KILN_OK && step < DECODE; step++) {
        kiln_tensor *lc = gpt_forward_cached(mc, kc, ids, n), *ld = lc ? gpt_forward_cached(md, kd, ids, n) : NULL;
        float *a = ld ? download(lc) : NULL, *b = a ? download(ld) : NULL;
        if (!b) {
            st = kiln_error_status();
            free(a);
            break;
        }
        char what[32];
        snprintf(what, sizeof what, "logits %d", step);
        kiln_verify_compare(r, what, a, b, GPT_BYTE_VOCAB, 1e-9);
        int tc = argmax(a, GPT_BYTE_VOCAB), td = argmax(b, GPT_BYTE_VOCAB);
        if (tc != td && fabsf(a[tc] - a[td]) > 1e-5f * fabsf(a[tc]) && r->verdict == KILN_VERIFY_PASS) {
            r->verdict = KILN_VERIFY_FAIL;
            snprintf(r->message, sizeof r->message, "token %d: the device picks %d (logit %.6g), the cpu %d (%.6g)",
                     step, td, (double)a[td], tc, (double)a[tc]);
        }
        free(a), free(b);
        kiln_step_reset(cpu);
        kiln_step_reset(dev);
        ids[0] = tc, n = 1;
    }
    for (int s = 0; s < 2; s++) kiln_set_grad_enabled(ctxs[s], grad[s]), kiln_set_training(ctxs[s], training[s]);
    gpt_kv_free(kc);
    gpt_kv_free(kd);
    gpt_free(mc);
    gpt_free(md);
    return st;
}

/* The checks of each model. */
static kiln_status train_step(kiln_ctx *dev, kiln_ctx *cpu, kiln_dtype precision, kiln_verify_result *r) {
    return train_step_of(&MODEL, dev, cpu, precision, r);
}
static kiln_status greedy_decode(kiln_ctx *dev, kiln_ctx *cpu, kiln_dtype precision, kiln_verify_result *r) {
    (void)precision;
    return greedy_decode_of(&MODEL, dev, cpu, r);
}
static kiln_status llama_train_step(kiln_ctx *dev, kiln_ctx *cpu, kiln_dtype precision, kiln_verify_result *r) {
    return train_step_of(&LLAMA, dev, cpu, precision, r);
}
static kiln_status llama_greedy_decode(kiln_ctx *dev, kiln_ctx *cpu, kiln_dtype precision, kiln_verify_result *r) {
    (void)precision;
    return greedy_decode_of(&LLAMA, dev, cpu, r);
}

#define LLAMA_SHAPES "2 layers, dim 48, 4 heads over 2 kv heads of 16, rmsnorm, rope, swiglu 80, qkv bias, qk-norm, untied"
static const verify_model_check CHECKS[] = {
    {.name = "train_step", .precision = KILN_VERIFY_DECLARED, .quick = 1, .run = train_step,
     .shapes = "2 layers, dim 48, 3 heads, 256 tokens; batch 2x24"},
    {.name = "train_step", .precision = KILN_VERIFY_F16, .run = train_step,
     .shapes = "2 layers, dim 48, 3 heads, 256 tokens; batch 2x24"},
    {.name = "greedy_decode_kv_cache", .precision = KILN_VERIFY_DECLARED, .quick = 1, .run = greedy_decode,
     .shapes = "8-token prompt, 32 tokens"},
    /* grouped-query attention with the rest of the Llama family's block: forward and backward
     * (every gradient), AdamW, and the KV cache holding KVH hd per position */
    {.name = "llama_train_step", .precision = KILN_VERIFY_DECLARED, .run = llama_train_step,
     .shapes = LLAMA_SHAPES "; batch 2x24"},
    {.name = "llama_train_step", .precision = KILN_VERIFY_F16, .run = llama_train_step,
     .shapes = LLAMA_SHAPES "; batch 2x24"},
    {.name = "llama_greedy_decode_kv_cache", .precision = KILN_VERIFY_DECLARED, .run = llama_greedy_decode,
     .shapes = LLAMA_SHAPES "; 8-token prompt, 32 tokens"},
};

const verify_model_check *verify_model_checks(int *count) {
    *count = (int)(sizeof CHECKS / sizeof CHECKS[0]);
    return CHECKS;
}

kiln_status verify_model_run(const verify_model_check *check, kiln_ctx *dev, kiln_ctx *cpu, kiln_verify_result *r) {
    memset(r, 0, sizeof *r);
    r->verdict = KILN_VERIFY_PASS;
    snprintf(r->against, sizeof r->against, "cpu");
    int f16 = check->precision == KILN_VERIFY_F16;
    if (f16 && !kiln_supports_dtype(dev, KILN_F16)) {
        r->verdict = KILN_VERIFY_SKIP;
        snprintf(r->message, sizeof r->message, "%s (%s) cannot store f16", kiln_backend_name(dev),
                 kiln_device_name(dev));
        return KILN_OK;
    }
    if (dev == cpu) { /* the CPU is the reference: nothing to compare it with */
        r->verdict = KILN_VERIFY_SKIP;
        snprintf(r->message, sizeof r->message, "the cpu backend is the reference of the whole-model checks");
        return KILN_OK;
    }
    return check->run(dev, cpu, f16 ? KILN_F16 : KILN_F32, r);
}
