/* `kiln bench attention`: causal self-attention, fused (kiln_attention) against unfused (the
 * separate ops the model used before it: split_heads, q k^T, kiln_softmax, probs v,
 * merge_heads), one forward and backward per step, over a list of context lengths: the peak
 * device memory and the step time of each path.
 *
 * Each measurement opens its own context, so that its memory counters describe that path at
 * that length alone: the peak is what the context holds (q, k, v and their gradients) plus
 * the most its step arena held (kiln_memory_arena_peak). The unfused path is not run where
 * its scores cannot fit the device (host_attention_fits, the rule kiln train applies before
 * its first step, run/attention_option.h): it reports "does not fit" and what it would need. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "run/attention_option.h"
#include "run/device.h"
#include "run/precision_option.h"
#include "run/progress.h"

typedef struct attention_bench {
    const char *backend, *precision, *lengths;
    int device, heads, head_dim, batch, repeats;
    kiln_dtype dtype;
} attention_bench;

/* One path's figures at one length: peak bytes and the median step (NAN: not run). */
typedef struct attention_figure {
    uint64_t peak, need;
    double step_s;
    int fits;
} attention_figure;

static kiln_tensor *unfused(kiln_tensor *q, kiln_tensor *k, kiln_tensor *v, int heads) {
    kiln_softmax_opts so = {.scale = 1.0f / sqrtf((float)(q->shape[2] / heads)), .causal = 1};
    kiln_tensor *scores = kiln_matmul(kiln_split_heads(q, heads), kiln_split_heads(k, heads), NULL, 0, 1);
    kiln_tensor *probs = kiln_softmax(scores, &so);
    return kiln_merge_heads(kiln_matmul(probs, kiln_split_heads(v, heads), NULL, 0, 0));
}

/* One step: the forward, the sum of y as the loss, the backward, waited for. */
static kiln_status step(kiln_tensor *const *qkv, int fused, int heads) {
    kiln_attention_opts o = {.n_head = heads, .causal = 1};
    kiln_tensor *y = fused ? kiln_attention(qkv[0], qkv[1], qkv[2], &o) : unfused(qkv[0], qkv[1], qkv[2], heads);
    kiln_status s = y ? kiln_backward(kiln_sum(y), 1.0f) : kiln_error_status();
    if (!s) s = kiln_sync(qkv[0]->ctx);
    if (!s) s = kiln_zero_grad(qkv, 3);
    kiln_step_reset(qkv[0]->ctx);
    return s;
}

/* q, k and v [batch, T, heads * head_dim], normal(0, 1) from the counter RNG, with gradients. */
static int make_qkv(kiln_ctx *ctx, const attention_bench *o, int64_t t, kiln_tensor **qkv) {
    int64_t shape[3] = {o->batch, t, (int64_t)o->heads * o->head_dim}, n = shape[0] * shape[1] * shape[2];
    float *host = malloc((size_t)n * sizeof *host);
    if (!host) return host_error("out of host memory");
    int rc = 0;
    for (int i = 0; i < 3 && !rc; i++) {
        for (int64_t j = 0; j < n; j++) host[j] = kiln_rng_normal(1, (uint64_t)i, (uint64_t)j);
        if (!(qkv[i] = kiln_tensor_new(ctx, o->dtype, 3, shape)) || kiln_upload_f32(qkv[i], host, n))
            rc = host_engine_error("bench attention: q, k, v");
        else
            kiln_set_requires_grad(qkv[i], 1);
    }
    free(host);
    return rc;
}

/* One path at length t in a context of its own: a warm-up step, then o->repeats timed ones. */
static int measure(const attention_bench *o, int64_t t, int fused, attention_figure *f) {
    *f = (attention_figure){.step_s = NAN, .fits = 1};
    kiln_ctx *ctx = host_open_device(o->backend, o->device);
    if (!ctx) return 1;
    kiln_tensor *qkv[3] = {0};
    double *times = calloc((size_t)o->repeats, sizeof *times);
    int rc = !times ? host_error("out of host memory") : make_qkv(ctx, o, t, qkv);
    if (!rc && !fused) {
        attention_scores s = {.elements = (uint64_t)o->batch * (uint64_t)o->heads * (uint64_t)t * (uint64_t)t,
                              .dtype = o->dtype, .training = 1};
        /* q, k, v and the gradients the backward will give them */
        f->fits = host_attention_fits(ctx, &s, 2 * kiln_memory_persistent(ctx), &f->need, NULL);
        if (f->fits < 0) rc = host_engine_error("device memory");
    }
    for (int r = -1; !rc && f->fits > 0 && r < o->repeats; r++) {
        double t0 = progress_now();
        if (step(qkv, fused, o->heads)) rc = host_engine_error(fused ? "fused attention" : "unfused attention");
        if (r >= 0) times[r] = progress_now() - t0;
    }
    if (!rc && f->fits > 0) {
        f->step_s = bench_median(times, o->repeats);
        f->peak = kiln_memory_persistent(ctx) + kiln_memory_arena_peak(ctx);
    }
    for (int i = 0; i < 3; i++) kiln_tensor_free(qkv[i]);
    free(times);
    kiln_close(ctx);
    return rc;
}

static void print_figure(const attention_figure *f) {
    char text[32];
    if (f->fits > 0)
        printf("  %12.2f %11.1f", (double)f->peak / 1048576.0, 1e3 * f->step_s);
    else
        printf("  does not fit (needs %s)", host_bytes_text(f->need, text, sizeof text));
}

/* The header: the shapes, the device and its memory. */
static int describe(const attention_bench *o) {
    kiln_ctx *ctx = host_open_device(o->backend, o->device);
    kiln_memory_info mi;
    if (!ctx || kiln_device_memory(ctx, &mi)) {
        kiln_close(ctx);
        return ctx ? host_engine_error("device memory") : 1;
    }
    char total[32], usable[32];
    host_say_device("bench attention", ctx);
    printf("attention: causal self-attention, %d heads of %d, batch %d, %s; a step is one forward and backward "
           "(the sum of y as the loss), median of %d after one untimed\n", o->heads, o->head_dim, o->batch,
           o->precision, o->repeats);
    printf("device: %s, %s: %s, of which kiln may use %s\n\n", kiln_backend_name(ctx), kiln_device_name(ctx),
           host_bytes_text(mi.total, total, sizeof total), host_bytes_text(mi.usable, usable, sizeof usable));
    printf("  %6s  %12s %11s  %12s %11s\n", "T", "fused MiB", "fused ms", "unfused MiB", "unfused ms");
    kiln_close(ctx);
    return 0;
}

int cmd_bench_attention(int argc, char **argv) {
    attention_bench o = {.backend = "cpu", .precision = "fp32", .lengths = "512,1024,2048,4096,8192", .device = -1,
                         .heads = 12, .head_dim = 64, .batch = 1, .repeats = 3};
    cli_opt opts[] = {
        {.name = "--lengths", .kind = CLI_STRING, .target = &o.lengths, .meta = "LIST",
         .help = "the context lengths T, comma-separated"},
        {.name = "--heads", .kind = CLI_INT, .target = &o.heads, .meta = "N", .help = "query heads", .min = 1,
         .max = 1024},
        {.name = "--head-dim", .kind = CLI_INT, .target = &o.head_dim, .meta = "N", .help = "width of a head",
         .min = 1, .max = 256},
        {.name = "--batch", .kind = CLI_INT, .target = &o.batch, .meta = "N", .help = "sequences", .min = 1,
         .max = 1 << 20},
        {.name = "--repeats", .kind = CLI_INT, .target = &o.repeats, .meta = "N", .help = "timed steps of each",
         .min = 1, .max = 1 << 20},
        host_precision_option(&o.precision),
        host_backend_option(&o.backend),
        host_device_option(&o.device),
    };
    int n = (int)(sizeof opts / sizeof opts[0]);
    const char *summary =
        "Causal self-attention fused (kiln_attention: memory linear in T) against unfused (the [T, T] scores\n"
        "materialized), one forward and backward per step: each path's peak device memory and step time\n"
        "for each T. The unfused path reports \"does not fit\" where its scores cannot fit the device's\n"
        "usable memory (the rule kiln train applies; KILN_MEMORY_LIMIT lowers it).";
    int rc = cli_parse("bench attention", summary, argc, argv, 3, opts, n);
    if (rc) return rc < 0 ? 1 : 0;
    if (host_parse_precision(o.precision, &o.dtype)) return 1;
    int64_t lengths[64];
    int count = 0;
    for (const char *p = o.lengths; *p && count < 64; count++) {
        char *end = (char *)p;
        long long v = *p >= '0' && *p <= '9' ? strtoll(p, &end, 10) : -1;
        if (v < 1 || v > (1 << 24) || (*end && *end != ','))
            return host_error("--lengths %s: expected positive whole numbers, comma-separated", o.lengths);
        lengths[count] = v;
        p = *end ? end + 1 : end;
    }
    if (count == 0) return host_error("--lengths is empty");
    if (describe(&o)) return 1;
    for (int i = 0; i < count; i++) {
        attention_figure fused, plain;
        if (measure(&o, lengths[i], 1, &fused) || measure(&o, lengths[i], 0, &plain)) return 1;
        printf("  %6lld", (long long)lengths[i]);
        print_figure(&fused);
        print_figure(&plain);
        printf("\n");
        fflush(stdout);
    }
    return 0;
}
