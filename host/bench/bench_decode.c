/* The decode section of `kiln bench` and `kiln bench decode`: what a user running a trained
 * model on a device gets from each weight format.
 *
 * For each model (the named sizes from their random init, or --ckpt: a kiln checkpoint, a
 * GGUF file or a Hugging Face folder, of GPT-2 or the Llama family) and each format:
 *
 *   f32     the checkpoint's weights
 *   f16     f16 weights and activations, as `kiln decode --precision fp16` (a file converted as
 *           it is read, host_load_gpt_model_as; a named size by gpt_set_precision)
 *   q8_0    the matrices in ggml's blocks (gpt_quantize: the model `kiln quantize` writes and
 *   q4_0    `kiln decode` reads back), activations f32: any pure type or mix of
 *   ...     gpt_quant_mix.h (q4_1 q5_0 q5_1 q4_k q5_k q6_k q4_k_m q4_k_s q5_k_m q5_k_s); a
 *           file quantized already runs as read, in its own format only (the pure type of
 *           its first block matrix: a Q4_K_M file runs as q4_k)
 *
 * the rows are: single-stream decoding in tokens/s (one token at a time after a prompt, each
 * token's logits read back and the next token picked on the host, as `kiln decode --greedy`
 * does; timed by the wall clock, which is what a user waits for), the weight bytes one token
 * reads, that traffic per second against the device's copy bandwidth (decoding one token
 * reads every weight once, so memory bandwidth is its limit on any device whose arithmetic
 * keeps up), prefill of the prompt in tokens/s, and the memory the model needs on the device:
 * its weights, the KV cache and the largest step's working memory (with a quantized model's
 * embedding blocks, kept on the host).
 *
 * Each format runs in a context of its own, opened on the same device, so its memory is its
 * own (a context keeps the largest step's working memory), and the model is built afresh (a
 * format change is one-way). After a model's formats, a line relates each quantized format to
 * f16: bytes per token and decoding speed. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "run/cli.h"
#include "run/gpt_load.h"
#include "model/gpt/gpt_quantize.h"

enum { FMT_F32, FMT_F16, FMT_QUANTIZED }; /* gpt_quant_type_at's order: f32, f16, then the quantized types */

static const char *format_name(int format) { return gpt_quant_type_at(format)->name; }

/* The measured results of one format, kept for the comparison line. */
typedef struct format_result {
    double tokens_per_s, bytes_per_token;
} format_result;

/* One model to run: a named size (cfg) or a checkpoint (path). */
typedef struct decode_model {
    const char *name, *path;
    const gpt_config *cfg;
} decode_model;

/* The format of a model read from a quantized file: the pure type of its first block
 * matrix's blocks, or -1. */
static int file_format(const gpt_model *m) {
    for (int l = 0; m->quant && l < m->cfg.n_layer; l++)
        for (int s = 0; s < BLOCK_SLOT_COUNT; s++)
            if (m->blocks[l].q[s]) {
                const kiln_qformat f = kiln_qmatrix_format(m->blocks[l].q[s]);
                for (int i = FMT_QUANTIZED; i < GPT_QUANT_TYPE_COUNT; i++)
                    if (gpt_quant_type_at(i)->rules == GPT_MIX_NONE && !strcmp(format_name(i), kiln_qformat_name(f)))
                        return i;
                return -1;
            }
    return -1;
}

/* The model in `format` on ctx: built from its init or file, then converted (a quantized
 * file runs in its own format only: the blocks are what it holds). NULL with the reason in
 * why; *missing set when the file cannot give this format (not a failure of the run). */
static gpt_model *build_model(kiln_ctx *ctx, const decode_model *dm, int format, char *why, size_t whylen,
                              int *missing) {
    gpt_model *m = NULL;
    *missing = 0;
    if (dm->path) {
        /* f16 as `kiln decode --precision fp16` reads it: converted as read, never in f32 */
        if (host_load_gpt_model_as(ctx, dm->path, format == FMT_F16 ? KILN_F16 : KILN_F32, &m, why, whylen))
            return NULL;
        if (m->quant) {
            const int own = file_format(m);
            if (own == format) return m;
            gpt_free(m);
            *missing = 1;
            return snprintf(why, whylen, "the file is quantized (%s): run in its own format only",
                            own < 0 ? "a format bench decode does not time" : format_name(own)), NULL;
        }
    } else if (!(m = gpt_new(ctx, dm->cfg)) || gpt_init(m, 1337)) {
        snprintf(why, whylen, "the model: %s", kiln_error_message());
        gpt_free(m);
        return NULL;
    }
    int rc = 0;
    if (format == FMT_F16 && m->dtype != KILN_F16 && gpt_set_precision(m, KILN_F16, 0))
        rc = snprintf(why, whylen, "f16: %s", kiln_error_message());
    else if (format >= FMT_QUANTIZED && gpt_quantize(m, gpt_quant_type_at(format), why, whylen))
        rc = 1;
    if (rc) {
        gpt_free(m);
        return NULL;
    }
    return m;
}

/* ---- the timed work ---- */

typedef struct stream_work {
    gpt_model *m;
    gpt_kv_cache *cache;
    int32_t *ids;     /* the prompt, then room for the decoded tokens */
    int prompt, tokens;
    float *logits;    /* one row of the vocabulary, on the host */
    kiln_tensor *out; /* the prefill's logits */
} stream_work;

static int prefill_prepare(void *arg) {
    ((stream_work *)arg)->cache->len = 0;
    return 0;
}

static int prefill_run(void *arg) {
    stream_work *w = arg;
    return (w->out = gpt_forward_cached(w->m, w->cache, w->ids, w->prompt)) ? 0 : -1;
}

static int prefill_check(void *arg, char *err, size_t errlen) {
    return bench_check_logits(((stream_work *)arg)->out, err, errlen);
}

/* Decodes w->tokens tokens greedily after the prompt: the cache holds all but its last token,
 * which is the first fed. Each token's logits are read back and the largest picked on the
 * host (the next token fed). Returns 0, or -1 with the engine's error set. */
static int decode_tokens(stream_work *w) {
    const int vocab = w->m->cfg.vocab_size;
    w->cache->len = w->prompt - 1;
    for (int t = 0; t < w->tokens; t++) {
        const int at = w->prompt - 1 + t;
        kiln_tensor *out = gpt_forward_cached(w->m, w->cache, &w->ids[at], 1);
        if (!out || kiln_download_f32(out, w->logits, vocab)) return -1;
        int best = 0;
        for (int v = 1; v < vocab; v++)
            if (w->logits[v] > w->logits[best]) best = v;
        if (!isfinite(w->logits[best]))
            return kiln_set_error(KILN_ERR_DEVICE, "the logits are not finite at position %d", at), -1;
        w->ids[at + 1] = best;
        kiln_step_reset(w->m->ctx);
    }
    return 0;
}

/* Tokens/s of decode_tokens by the wall clock: one warm-up run, then `repeats`; fills f
 * (median and spread). Returns 0, or -1 after marking f not measured. */
static int time_decoding(stream_work *w, int repeats, bench_figure *f) {
    double rate[16];
    if (repeats > 16) repeats = 16;
    for (int r = -1; r < repeats; r++) {
        double t0 = kiln_clock_wall();
        if (decode_tokens(w) || kiln_sync(w->m->ctx)) {
            bench_engine_failure(f, "decoding");
            kiln_step_reset(w->m->ctx);
            return -1;
        }
        double secs = kiln_clock_wall() - t0;
        if (r >= 0) rate[r] = w->tokens / secs;
    }
    f->repeats = repeats;
    f->median = bench_median(rate, repeats); /* sorts: the ends are the spread */
    f->min = rate[0], f->max = rate[repeats - 1];
    f->wall_s = w->tokens / f->median;
    return 0;
}

/* ---- one model in one format ---- */

/* A figure of the decode section: key "<model>.<format>.<what>", label likewise. */
static bench_figure *add_figure(bench_device *d, const char *model, const char *format, const char *what,
                                const char *label, bench_unit unit, const char *shape) {
    char key[48], lab[64];
    snprintf(key, sizeof key, "%s.%s.%s", model, format, what);
    snprintf(lab, sizeof lab, "%s %s %s", model, format, label);
    bench_figure *f = bench_add(d, BENCH_DECODE, key, lab, unit);
    if (f) snprintf(f->shape, sizeof f->shape, "%s", shape);
    return f;
}

/* The rows of a format that could not run, each with the reason. */
static void format_failed(bench_device *d, const char *model, const char *format, const char *why, int error) {
    static const struct {
        const char *what, *label;
        bench_unit unit;
    } rows[] = {{"decode.tokens", "decode", BENCH_TOKENS_PER_S},
                {"decode.weights", "weights read", BENCH_GBPS},
                {"prefill.tokens", "prefill", BENCH_TOKENS_PER_S},
                {"memory", "memory", BENCH_MIB}};
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        bench_figure *f = add_figure(d, model, format, rows[i].what, rows[i].label, rows[i].unit, "");
        if (!f) return;
        bench_not_measured(f, error && i == 0, "%s", why);
        bench_print_figure(stdout, f);
    }
}

/* The model in format `format` on ctx, and what a stream needs (the prompt, the logits' host
 * copy, the KV cache), in *w; 0, or -1 with the format's rows failed (w->m NULL when the
 * model could not be built). */
static int stream_setup(const bench_options *o, bench_device *d, const decode_model *dm, int format, kiln_ctx *ctx,
                        stream_work *w) {
    const char *fmt = format_name(format);
    char why[512] = "";
    int missing;
    if (!(w->m = build_model(ctx, dm, format, why, sizeof why, &missing))) {
        /* out of memory is what the device lacks, as a format the file does not hold;
         * anything else is a failure */
        format_failed(d, dm->name, fmt, why, !missing && kiln_error_status() != KILN_ERR_MEMORY);
        kiln_clear_error();
        return -1;
    }
    const gpt_config *c = &w->m->cfg;
    w->prompt = o->prompt < c->n_positions / 2 ? o->prompt : c->n_positions / 2;
    w->tokens = o->tokens < c->n_positions - w->prompt ? o->tokens : c->n_positions - w->prompt;
    w->ids = malloc((size_t)(w->prompt + w->tokens) * sizeof *w->ids);
    w->logits = malloc((size_t)c->vocab_size * sizeof *w->logits);
    if (!w->ids || !w->logits || !(w->cache = gpt_kv_new(w->m))) {
        format_failed(d, dm->name, fmt, w->ids && w->logits ? kiln_error_message() : "out of host memory", 1);
        return -1;
    }
    for (int i = 0; i < w->prompt; i++)
        w->ids[i] = (int32_t)(kiln_rng_u32(17, 3, (uint64_t)i) % (uint32_t)c->vocab_size);
    return 0;
}

/* The decode row (single-stream tokens/s after the prompt's prefill) and the weights-read
 * row (the bytes every decoded token reads, at that rate); -1 when the prefill failed. */
static int decode_rows(const bench_options *o, bench_device *d, const decode_model *dm, const char *fmt,
                       kiln_ctx *ctx, stream_work *w, format_result *res) {
    char shape[64];
    const double bytes = gpt_weight_bytes_per_token(w->m);
    res->bytes_per_token = bytes;
    snprintf(shape, sizeof shape, "%d after %d", w->tokens, w->prompt);
    bench_figure *f = add_figure(d, dm->name, fmt, "decode.tokens", "decode", BENCH_TOKENS_PER_S, shape);
    if (!f) return -1;
    /* the prompt's cache first: decoding starts where a prefill leaves it */
    if (prefill_prepare(w) || prefill_run(w) || kiln_sync(ctx)) {
        format_failed(d, dm->name, fmt, kiln_error_message(), 1);
        return -1;
    }
    kiln_step_reset(ctx);
    int ok = time_decoding(w, o->quick ? 1 : 3, f) == 0;
    bench_print_figure(stdout, f);
    if (ok) res->tokens_per_s = f->median;

    snprintf(shape, sizeof shape, "%.3g MB/token", bytes * 1e-6);
    if ((f = add_figure(d, dm->name, fmt, "decode.weights", "weights read", BENCH_GBPS, shape))) {
        if (ok) { /* the bytes of every decoded token, at the median rate */
            f->median = bytes * res->tokens_per_s * 1e-9;
            f->repeats = 1;
            bench_relate(d, f, "copy");
        } else {
            bench_not_measured(f, 0, "decoding failed");
        }
        bench_print_figure(stdout, f);
    }
    return 0;
}

/* The prefill row (the prompt's tokens/s) and the memory row: what the context holds (the
 * weights, the KV cache, the largest step's working memory) and the embedding's blocks on
 * the host. */
static void prefill_memory_rows(const bench_options *o, bench_device *d, const decode_model *dm, const char *fmt,
                                kiln_ctx *ctx, stream_work *w) {
    char shape[64];
    bench_figure *f;
    snprintf(shape, sizeof shape, "prompt %d", w->prompt);
    if ((f = add_figure(d, dm->name, fmt, "prefill.tokens", "prefill", BENCH_TOKENS_PER_S, shape))) {
        bench_work bw = {.prepare = prefill_prepare, .run = prefill_run, .check = prefill_check, .arg = w,
                         .amount = w->prompt};
        bench_time(ctx, &bw, 1, o->quick ? 1 : 3, f);
        bench_print_figure(stdout, f);
    }
    const gpt_model *m = w->m;
    double mib = (double)(kiln_memory_persistent(ctx) + kiln_memory_arena_peak(ctx));
    if (m->quant && m->quant->embd) mib += (double)m->quant->embd_row_bytes * m->cfg.vocab_size;
    snprintf(shape, sizeof shape, "context %d", m->cfg.n_positions);
    if ((f = add_figure(d, dm->name, fmt, "memory", "memory", BENCH_MIB, shape))) {
        f->median = f->min = f->max = mib / (1 << 20);
        f->repeats = 1;
        bench_print_figure(stdout, f);
    }
}

/* One weight format of model dm on device d, in a context of its own: its rows, and in
 * *res what compare_formats needs. */
static void run_format(const bench_options *o, bench_device *d, const decode_model *dm, int format,
                       format_result *res) {
    const char *fmt = format_name(format);
    res->tokens_per_s = res->bytes_per_token = NAN;
    kiln_ctx *ctx = NULL;
    if (kiln_open(d->id, &ctx)) { /* the same device, in a context of its own */
        format_failed(d, dm->name, fmt, kiln_error_message(), 1);
        kiln_clear_error();
        return;
    }
    if (format == FMT_F16 && !kiln_supports_dtype(ctx, KILN_F16)) {
        format_failed(d, dm->name, fmt, "the device cannot store f16", 0);
        kiln_close(ctx);
        return;
    }
    fprintf(stderr, "kiln bench: %s: decode %s %s\n", d->id, dm->name, fmt);
    kiln_set_grad_enabled(ctx, 0);
    kiln_set_training(ctx, 0);
    stream_work w = {0};
    if (stream_setup(o, d, dm, format, ctx, &w) == 0 && decode_rows(o, d, dm, fmt, ctx, &w, res) == 0)
        prefill_memory_rows(o, d, dm, fmt, ctx, &w);
    if (w.m) kiln_step_reset(ctx);
    gpt_kv_free(w.cache);
    gpt_free(w.m);
    free(w.ids), free(w.logits);
    kiln_close(ctx);
}

/* After a model's formats: each quantized format against f16 (or f32 without f16). */
static void compare_formats(const char *model, const format_result *r, const bench_options *o) {
    const int base = o->formats[FMT_F16] && isfinite(r[FMT_F16].tokens_per_s) ? FMT_F16 : FMT_F32;
    if (!o->formats[base] || !isfinite(r[base].tokens_per_s)) return;
    for (int q = FMT_QUANTIZED; q < GPT_QUANT_TYPE_COUNT; q++) {
        if (!o->formats[q] || !isfinite(r[q].tokens_per_s)) continue;
        printf("  %s: %s reads %.2fx the bytes of %s per token and decodes %.2fx as fast\n", model, format_name(q),
               r[q].bytes_per_token / r[base].bytes_per_token, format_name(base),
               r[q].tokens_per_s / r[base].tokens_per_s);
    }
    fflush(stdout);
}

int bench_decode_check_ckpt(const char *path) {
    kiln_ctx *ctx = NULL;
    if (kiln_open("cpu", &ctx)) return host_error("kiln bench: the cpu backend: %s", kiln_error_message());
    gpt_model *m = NULL;
    char why[512];
    int rc = host_load_gpt_model_as(ctx, path, KILN_F32, &m, why, sizeof why) ? host_error("%s", why) : 0;
    gpt_free(m);
    kiln_close(ctx);
    return rc;
}

void bench_decode(kiln_ctx *ctx, const bench_options *o, bench_device *d) {
    if (!bench_find(d, "copy")) bench_copy_ceiling(ctx, o, d);
    fprintf(stderr, "kiln bench: %s: decode\n", d->id);
    bench_print_section(stdout, BENCH_DECODE);
    decode_model models[BENCH_MODEL_SIZES];
    int n = 0;
    if (o->ckpt) models[n++] = (decode_model){.name = "ckpt", .path = o->ckpt};
    for (int i = 0; !o->ckpt && i < BENCH_MODEL_SIZES; i++)
        if (o->sizes[i]) models[n++] = (decode_model){.name = bench_model_name(i), .cfg = bench_model_config(i)};
    for (int i = 0; i < n; i++) {
        format_result r[GPT_QUANT_TYPE_COUNT];
        for (int fmt = 0; fmt < GPT_QUANT_TYPE_COUNT; fmt++) {
            r[fmt].tokens_per_s = r[fmt].bytes_per_token = NAN;
            if (o->formats[fmt]) run_format(o, d, &models[i], fmt, &r[fmt]);
        }
        compare_formats(models[i].name, r, o);
    }
}
