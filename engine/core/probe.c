/* Device measurement (kiln/probe.h): the backend-independent half.
 *
 * The backends only record work (an FMA kernel, a copy, a chain of tiny kernels) and time
 * it (timer_begin/timer_end slots, engine/core/backend.h). Everything a figure needs on top
 * of that lives here, once: argument checks, buffers, sizing the FMA run so that it lasts
 * long enough to time, warm-up, repeats, median and spread, and a check of every result
 * after the timed runs: a ceiling computed by a kernel that did not do its work would be
 * worse than no figure at all. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "kiln/probe.h"

/* An FMA run is sized to last about this long on the device: long enough that timer
 * resolution and launch costs vanish, short enough for `kiln bench` to try every width. */
#define FMA_RUN_S 0.03
/* Tiny kernels per dispatch-latency run. */
#define DISPATCH_COUNT 100
/* Rounds per FMA run at most (GPU kernels take them as a 32-bit count). */
#define FMA_MAX_ITERS ((int64_t)1 << 31)
#define MAX_REPEATS 1000
/* The FMA kernels' recurrence a = a * 0.5 + 1: the product is exact in f32 and f16, so a
 * fused and an unfused FMA give the same bits, and every accumulator settles at 2 within a
 * few dozen rounds without ever growing or becoming denormal. The device cannot know the
 * values (they are arguments), so nothing is folded away. */
#define FMA_MUL 0.5f
#define FMA_ADD 1.0f

struct kiln_probe_state {
    void *timer; /* the backend's state while a timer runs */
    int running;
    double wall0;
    int have_driver;
    char driver[256];
};

static struct kiln_probe_state *state_of(kiln_ctx *ctx) {
    if (!ctx->probe) ctx->probe = calloc(1, sizeof *ctx->probe);
    return ctx->probe;
}

void kiln_probe_release(kiln_ctx *ctx) {
    struct kiln_probe_state *st = ctx->probe;
    if (!st) return;
    if (st->running) { /* a timer the caller never ended: its backend state still needs freeing */
        double ignored;
        ctx->be->timer_end(ctx->dev, st->timer, &ignored);
    }
    free(st);
    ctx->probe = NULL;
}

/* ---- timers ---- */

static kiln_status need_timer(kiln_ctx *ctx, const char *fn) {
    if (!ctx) return kiln_set_error(KILN_ERR_ARGUMENT, "%s: ctx is NULL", fn);
    if (!ctx->be->timer_begin || !ctx->be->timer_end)
        return kiln_set_error(KILN_ERR_UNSUPPORTED, "%s: the %s backend cannot time work on its device", fn,
                              ctx->be->name);
    return KILN_OK;
}

kiln_status kiln_timer_begin(kiln_ctx *ctx) {
    kiln_status s = need_timer(ctx, "kiln_timer_begin");
    if (s) return s;
    struct kiln_probe_state *st = state_of(ctx);
    if (!st) return kiln_set_error(KILN_ERR_MEMORY, "kiln_timer_begin: out of host memory");
    if (st->running)
        return kiln_set_error(KILN_ERR_STATE,
                              "kiln_timer_begin: a timer is already running on this context (timers do not "
                              "nest); call kiln_timer_end first");
    s = ctx->be->timer_begin(ctx->dev, &st->timer);
    if (s) return s;
    /* after the backend's begin, which may wait for earlier work: that wait is not timed */
    st->wall0 = kiln_clock_wall();
    st->running = 1;
    return KILN_OK;
}

kiln_status kiln_timer_end(kiln_ctx *ctx, double *device_s, double *wall_s) {
    kiln_status s = need_timer(ctx, "kiln_timer_end");
    if (s) return s;
    struct kiln_probe_state *st = ctx->probe;
    if (!st || !st->running)
        return kiln_set_error(KILN_ERR_STATE, "kiln_timer_end: no timer is running on this context; call "
                                              "kiln_timer_begin first");
    double dev = 0;
    st->running = 0;
    s = ctx->be->timer_end(ctx->dev, st->timer, &dev);
    double wall = kiln_clock_wall() - st->wall0;
    st->timer = NULL;
    if (s) return s;
    if (device_s) *device_s = dev;
    if (wall_s) *wall_s = wall;
    return KILN_OK;
}

const char *kiln_device_driver(const kiln_ctx *ctx) {
    if (!ctx || !ctx->be->driver_info) return "";
    /* The string is cached in the context's probe state, which the context owns (it is
     * never a const object: contexts come from kiln_open). */
    struct kiln_probe_state *st = state_of((kiln_ctx *)ctx);
    if (!st) return "";
    if (!st->have_driver) {
        st->driver[0] = 0;
        ctx->be->driver_info(ctx->dev, st->driver, sizeof st->driver);
        st->have_driver = 1;
    }
    return st->driver;
}

/* ---- one measurement: warm-up, repeats, statistics ---- */

/* Records one run of the measured work (the timer is already running). */
typedef kiln_status (*probe_run_fn)(kiln_ctx *ctx, void *arg);

/* Times one run: device and wall seconds. The timer is ended even when the run fails. */
static kiln_status timed_run(kiln_ctx *ctx, probe_run_fn run, void *arg, double *device_s, double *wall_s) {
    kiln_status s = kiln_timer_begin(ctx);
    if (s) return s;
    s = run(ctx, arg);
    if (s) {
        double ignored;
        kiln_timer_end(ctx, &ignored, &ignored);
        return s;
    }
    s = kiln_timer_end(ctx, device_s, wall_s);
    if (!s && !(*device_s > 0))
        return kiln_set_error(KILN_ERR_DEVICE, "probe: the %s device timer measured no time for a run (%g s)",
                              ctx->be->name, *device_s);
    return s;
}

/* Times one run on the host clock alone, between syncs. */
static kiln_status host_timed_run(kiln_ctx *ctx, probe_run_fn run, void *arg, double *device_s, double *wall_s) {
    kiln_status s = kiln_sync(ctx);
    if (s) return s;
    double t0 = kiln_clock_wall();
    s = run(ctx, arg);
    if (!s) s = kiln_sync(ctx);
    *device_s = *wall_s = kiln_clock_wall() - t0;
    return s;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median_of(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* How a run's time becomes the figure. */
typedef enum figure_kind {
    FIGURE_RATE_DEVICE, /* work / device time (GFLOP/s, GB/s) */
    FIGURE_RATE_HOST,   /* work / wall time of a run between two syncs, no device timer
                         * (device_s is that wall time too) */
    FIGURE_LATENCY_US   /* device time / work, in microseconds */
} figure_kind;

/* One warm-up run (`warmed`: the caller has already run the work, untimed or for sizing),
 * then `repeats` timed runs. `work` is in units of 1e9 for rates (GFLOP, GB) and a count
 * for latencies. */
static kiln_status measure(kiln_ctx *ctx, probe_run_fn run, void *arg, int repeats, int warmed, double work,
                           figure_kind kind, kiln_measure *out) {
    double *dev = malloc(3 * (size_t)repeats * sizeof *dev);
    if (!dev) return kiln_set_error(KILN_ERR_MEMORY, "probe: out of host memory");
    double *wall = dev + repeats, *fig = wall + repeats;
    kiln_status s = KILN_OK;
    if (!warmed) {
        double d, w;
        s = kind == FIGURE_RATE_HOST ? host_timed_run(ctx, run, arg, &d, &w) : timed_run(ctx, run, arg, &d, &w);
    }
    for (int r = 0; r < repeats && !s; r++) {
        s = kind == FIGURE_RATE_HOST ? host_timed_run(ctx, run, arg, &dev[r], &wall[r])
                                     : timed_run(ctx, run, arg, &dev[r], &wall[r]);
        if (s) break;
        fig[r] = kind == FIGURE_LATENCY_US ? dev[r] / work * 1e6 : work / dev[r];
    }
    if (!s) {
        memset(out, 0, sizeof *out);
        out->repeats = repeats;
        out->median = median_of(fig, repeats);
        out->min = fig[0];
        out->max = fig[repeats - 1];
        out->device_s = median_of(dev, repeats);
        out->wall_s = median_of(wall, repeats);
    }
    free(dev);
    return s;
}

static kiln_status check_common(kiln_ctx *ctx, int repeats, kiln_measure *out, const char *fn) {
    if (!ctx) return kiln_set_error(KILN_ERR_ARGUMENT, "%s: ctx is NULL", fn);
    if (!out) return kiln_set_error(KILN_ERR_ARGUMENT, "%s: out is NULL", fn);
    if (repeats < 1 || repeats > MAX_REPEATS)
        return kiln_set_error(KILN_ERR_ARGUMENT, "%s: repeats must be between 1 and %d, got %d", fn, MAX_REPEATS,
                              repeats);
    if (ctx->probe && ctx->probe->running)
        return kiln_set_error(KILN_ERR_STATE, "%s: a timer is running on this context; probes time themselves, so "
                                              "call kiln_timer_end first", fn);
    return need_timer(ctx, fn);
}

/* A device buffer of `bytes`, freed with free_buf. */
static kiln_status alloc_buf(kiln_ctx *ctx, size_t bytes, kiln_ref *out) {
    out->off = 0;
    out->buf = NULL;
    return kiln_device_alloc(ctx, bytes, &out->buf);
}

/* A buffer size for the bandwidth probes: at most the device's largest buffer, a multiple
 * of 256. */
static size_t probe_bytes(const kiln_ctx *ctx, size_t bytes) {
    if (ctx->be->max_buffer_bytes && bytes > ctx->be->max_buffer_bytes) bytes = ctx->be->max_buffer_bytes;
    return bytes / 256 * 256;
}

static void free_buf(kiln_ctx *ctx, kiln_ref r) {
    if (r.buf) ctx->be->free(ctx->dev, r.buf);
}

static kiln_status fill_words(kiln_ctx *ctx, kiln_ref r, size_t words, kiln_dtype dtype, float value) {
    kiln_fill_args f = {.dst = r, .n = (int64_t)words, .dtype = dtype, .value = value};
    return KILN_CALL(ctx, fill, &f);
}

/* ---- FMA throughput ---- */

static kiln_status run_fma(kiln_ctx *ctx, void *arg) {
    return ctx->be->probe_fma(ctx->dev, (kiln_probe_fma_args *)arg);
}

/* One accumulator after `iters` rounds of a = fma(a, mul, add) in dtype arithmetic: the
 * value every correct device computes. Stops early once the value no longer changes. */
static float fma_chain_reference(kiln_dtype dtype, float start, float mul, float add, int64_t iters) {
    float a = dtype == KILN_F16 ? kiln_f16_to_f32(kiln_f32_to_f16(start)) : start;
    for (int64_t i = 0; i < iters; i++) {
        float next;
        if (dtype == KILN_F16) /* the exact a*mul+add in double, rounded once to f16 (via f32: exact here) */
            next = kiln_f16_to_f32(kiln_f32_to_f16((float)((double)a * mul + add)));
        else
            next = fmaf(a, mul, add);
        if (next == a) break;
        a = next;
    }
    return a;
}

/* The sum one work item writes: its chains x width accumulators (see kiln_probe_fma_args). */
double kiln_probe_fma_expected(kiln_dtype dtype, int accumulators, float mul, float add, int64_t iters) {
    double sum = 0;
    float cache[32]; /* the start value repeats every 32 accumulators */
    for (int k = 0; k < 32 && k < accumulators; k++)
        cache[k] = fma_chain_reference(dtype, 1.0f + (float)k / 16.0f, mul, add, iters);
    for (int k = 0; k < accumulators; k++) sum += cache[k % 32];
    return sum;
}

kiln_status kiln_probe_fma(kiln_ctx *ctx, kiln_dtype dtype, int width, int repeats, kiln_measure *out) {
    static const char fn[] = "kiln_probe_fma";
    kiln_status s = check_common(ctx, repeats, out, fn);
    if (s) return s;
    if (dtype != KILN_F32 && dtype != KILN_F16)
        return kiln_set_error(KILN_ERR_ARGUMENT, "%s: dtype must be f32 or f16, got %s", fn, kiln_dtype_name(dtype));
    if (width < 1 || width > 32 || (width & (width - 1)))
        return kiln_set_error(KILN_ERR_ARGUMENT, "%s: width must be 1, 2, 4, 8, 16 or 32 lanes, got %d", fn, width);
    if (!ctx->be->probe_fma)
        return kiln_set_error(KILN_ERR_UNSUPPORTED, "%s: the %s backend has no FMA probe", fn, ctx->be->name);

    /* Sizing. The first runs write nowhere we read and learn how many items fill the
     * device. Three runs of a few rounds measure what a run costs besides arithmetic (a
     * launch; on a shared machine also waiting for a CPU thread to be scheduled: ~25 ms at
     * a load of 10 on 2 cores); then the rounds grow until a run lasts FMA_RUN_S, or 4x
     * that cost, at the best rate seen (a preempted run's rate is low). */
    kiln_probe_fma_args a = {.dtype = dtype, .width = width, .items = 0, .iters = 64, .mul = FMA_MUL, .add = FMA_ADD};
    double dev = 0, wall, fixed[3];
    /* the first run only warms up: its device time may hold a kernel compile (PoCL compiles
     * on first enqueue) */
    if ((s = timed_run(ctx, run_fma, &a, &dev, &wall))) return s;
    for (int i = 0; i < 3; i++)
        if ((s = timed_run(ctx, run_fma, &a, &fixed[i], &wall))) return s;
    double run_s = 4.0 * median_of(fixed, 3);
    if (run_s < FMA_RUN_S) run_s = FMA_RUN_S;
    double best_rate = 0; /* rounds per second */
    for (;;) {
        if ((s = timed_run(ctx, run_fma, &a, &dev, &wall))) return s;
        if ((double)a.iters / dev > best_rate) best_rate = (double)a.iters / dev;
        double want = best_rate * run_s;
        if ((dev >= 0.8 * run_s && (double)a.iters >= 0.8 * want) || a.iters >= FMA_MAX_ITERS) break;
        double next = want * 1.1;
        if (next < 2.0 * (double)a.iters) next = 2.0 * (double)a.iters;
        if (next > 64.0 * (double)a.iters) next = 64.0 * (double)a.iters;
        a.iters = next < (double)FMA_MAX_ITERS ? (int64_t)next : FMA_MAX_ITERS;
    }
    kiln_ref res;
    if ((s = alloc_buf(ctx, (size_t)a.items * sizeof(float), &res))) return s;
    a.out = res;
    double flops = 2.0 * (double)a.items * (double)a.iters * (double)a.chains * width;
    s = measure(ctx, run_fma, &a, repeats, 1, flops * 1e-9, FIGURE_RATE_DEVICE, out);

    /* every item must hold exactly what the recurrence gives */
    float *got = s ? NULL : malloc((size_t)a.items * sizeof *got);
    if (!s && !got) s = kiln_set_error(KILN_ERR_MEMORY, "%s: out of host memory", fn);
    if (!s) s = ctx->be->download(ctx->dev, res, got, (size_t)a.items * sizeof *got);
    if (!s) {
        double want = kiln_probe_fma_expected(dtype, a.chains * width, a.mul, a.add, a.iters);
        for (int64_t i = 0; i < a.items && !s; i++)
            if (!(fabs(got[i] - want) <= 1e-5 * fabs(want)))
                s = kiln_set_error(KILN_ERR_DEVICE,
                                   "%s: %s x%d: work item %lld computed %.9g, expected %.9g: the FMA kernel of %s is "
                                   "wrong, so its figure would mean nothing",
                                   fn, kiln_dtype_name(dtype), width, (long long)i, got[i], want, ctx->be->name);
    }
    free(got);
    free_buf(ctx, res);
    return s;
}

/* ---- memory copy ---- */

static kiln_status run_copy(kiln_ctx *ctx, void *arg) {
    return ctx->be->probe_copy(ctx->dev, (const kiln_probe_copy_args *)arg);
}

/* Reads back 64 spread samples of 16 bytes of dst, which must all hold `value`. */
static kiln_status check_copy(kiln_ctx *ctx, kiln_ref dst, size_t bytes, float value) {
    for (int i = 0; i < 64; i++) {
        size_t at = (bytes - 16) / 63 * (size_t)i / 16 * 16;
        kiln_ref r = {.buf = dst.buf, .off = dst.off + at};
        float got[4];
        kiln_status s = ctx->be->download(ctx->dev, r, got, sizeof got);
        if (s) return s;
        for (int j = 0; j < 4; j++)
            if (got[j] != value)
                return kiln_set_error(KILN_ERR_DEVICE,
                                      "kiln_probe_copy: byte %zu of the copy holds %g instead of %g: the copy "
                                      "kernel of %s is wrong",
                                      at + 4 * (size_t)j, got[j], value, ctx->be->name);
    }
    return KILN_OK;
}

kiln_status kiln_probe_copy(kiln_ctx *ctx, size_t bytes, int repeats, kiln_measure *out) {
    static const char fn[] = "kiln_probe_copy";
    kiln_status s = check_common(ctx, repeats, out, fn);
    if (s) return s;
    if (bytes < 4096)
        return kiln_set_error(KILN_ERR_ARGUMENT, "%s: %zu bytes is too small to measure memory (at least 4096; "
                                                 "use more than the device's last-level cache)", fn, bytes);
    if (!ctx->be->probe_copy)
        return kiln_set_error(KILN_ERR_UNSUPPORTED, "%s: the %s backend has no copy probe", fn, ctx->be->name);
    bytes = probe_bytes(ctx, bytes);
    kiln_probe_copy_args a = {.bytes = bytes};
    s = alloc_buf(ctx, bytes, &a.src);
    if (!s) s = alloc_buf(ctx, bytes, &a.dst);
    /* filled first: every page is touched before the timed runs, and the check can tell
     * copied bytes from untouched ones */
    if (!s) s = fill_words(ctx, a.src, bytes / 4, KILN_F32, 1.5f);
    if (!s) s = fill_words(ctx, a.dst, bytes / 4, KILN_F32, 0.0f);
    if (!s) s = measure(ctx, run_copy, &a, repeats, 0, 2.0 * (double)bytes * 1e-9, FIGURE_RATE_DEVICE, out);
    if (!s) s = check_copy(ctx, a.dst, bytes, 1.5f);
    free_buf(ctx, a.src);
    free_buf(ctx, a.dst);
    return s;
}

/* ---- host <-> device transfers ---- */

typedef struct transfer_run {
    kiln_ref dev;
    void *host;
    size_t bytes;
    int to_device;
} transfer_run;

static kiln_status run_transfer(kiln_ctx *ctx, void *arg) {
    transfer_run *t = arg;
    return t->to_device ? ctx->be->upload(ctx->dev, t->dev, t->host, t->bytes)
                        : ctx->be->download(ctx->dev, t->dev, t->host, t->bytes);
}

kiln_status kiln_probe_transfer(kiln_ctx *ctx, size_t bytes, int to_device, int repeats, kiln_measure *out) {
    static const char fn[] = "kiln_probe_transfer";
    kiln_status s = check_common(ctx, repeats, out, fn);
    if (s) return s;
    if (bytes < 4096)
        return kiln_set_error(KILN_ERR_ARGUMENT, "%s: %zu bytes is too small to measure a transfer (at least 4096)",
                              fn, bytes);
    bytes = probe_bytes(ctx, bytes);
    transfer_run t = {.bytes = bytes, .to_device = to_device != 0};
    t.host = malloc(bytes);
    if (!t.host) return kiln_set_error(KILN_ERR_MEMORY, "%s: out of host memory for %zu bytes", fn, bytes);
    float *h = t.host; /* every host page touched, and a value to check the last transfer by */
    for (size_t i = 0; i < bytes / 4; i++) h[i] = t.to_device ? 2.5f : -1.0f;
    s = alloc_buf(ctx, bytes, &t.dev);
    if (!s) s = fill_words(ctx, t.dev, bytes / 4, KILN_F32, t.to_device ? 0.0f : 2.5f);
    /* Timed by the host from an idle device, as bulk transfers happen (loading weights,
     * reading results): kiln's path then is what a caller gets (Vulkan writes mapped memory
     * in place when nothing is in flight, and stages otherwise; a device timer would keep a
     * batch open and force the staging path). */
    if (!s) s = measure(ctx, run_transfer, &t, repeats, 0, (double)bytes * 1e-9, FIGURE_RATE_HOST, out);
    if (!s && t.to_device) s = ctx->be->download(ctx->dev, t.dev, t.host, bytes);
    for (size_t i = 0; i < bytes / 4 && !s; i += 1021)
        if (h[i] != 2.5f)
            s = kiln_set_error(KILN_ERR_DEVICE, "%s: the transferred bytes differ from the source (%g at float %zu)",
                               fn, h[i], i);
    free_buf(ctx, t.dev);
    free(t.host);
    return s;
}

/* ---- dispatch latency ---- */

static kiln_status run_dispatch(kiln_ctx *ctx, void *arg) {
    return ctx->be->probe_dispatch(ctx->dev, (const kiln_probe_dispatch_args *)arg);
}

kiln_status kiln_probe_dispatch(kiln_ctx *ctx, int repeats, kiln_measure *out) {
    static const char fn[] = "kiln_probe_dispatch";
    kiln_status s = check_common(ctx, repeats, out, fn);
    if (s) return s;
    if (!ctx->be->probe_dispatch)
        return kiln_set_error(KILN_ERR_UNSUPPORTED, "%s: the %s backend has no dispatch probe", fn, ctx->be->name);
    kiln_probe_dispatch_args a = {.count = DISPATCH_COUNT};
    s = alloc_buf(ctx, 256, &a.counter);
    if (!s) s = fill_words(ctx, a.counter, 1, KILN_I32, 0.0f);
    if (!s) s = measure(ctx, run_dispatch, &a, repeats, 0, DISPATCH_COUNT, FIGURE_LATENCY_US, out);
    int32_t count = 0;
    if (!s) s = ctx->be->download(ctx->dev, a.counter, &count, sizeof count);
    if (!s && count != (repeats + 1) * DISPATCH_COUNT)
        s = kiln_set_error(KILN_ERR_DEVICE, "%s: %d of the %d tiny kernels of %s ran", fn, count,
                           (repeats + 1) * DISPATCH_COUNT, ctx->be->name);
    free_buf(ctx, a.counter);
    return s;
}
