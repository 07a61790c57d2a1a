/* The device's ceilings, through kiln/probe.h: FMA throughput in f32 and f16 at each vector
 * width (and the best of them, which the GEMMs and the models are measured against), copy
 * bandwidth (what the memory-bound kernels are measured against), host<->device transfers
 * and dispatch latency.
 *
 * Then a cross-check of the f32 ceiling: OpenBLAS's sgemm on the host CPU at 1024^3, where
 * it comes close to the chip's peak, as a percentage of it. On the cpu backend the ceiling
 * and sgemm run on the same cores, so sgemm above 100% means the ceiling kernel measures
 * less than the chip does: that is an error, as it would make every percentage of the run
 * too high. On other devices the line says how the device compares with the host's best
 * f32 GEMM. */
#define _DEFAULT_SOURCE /* getloadavg */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef KILN_BENCH_OPENBLAS
#include <cblas.h>
#endif

#include "bench/bench.h"
#include "run/progress.h"

/* 32 only for f16: AVX512-FP16 CPUs have 32-lane f16 vectors, and nothing has 32-lane f32 */
/* Every percentage of the run divides by a ceiling's best run, so ceilings get at least 5
 * runs (3 in a --quick run): on a loaded machine a best of 2 is often an interrupted one. */
static int ceiling_repeats(const bench_options *o) {
    const int least = o->quick ? 3 : 5;
    return o->repeat > least ? o->repeat : least;
}

static const int fma_widths[] = {1, 2, 4, 8, 16, 32};
#define N_WIDTHS ((int)(sizeof fma_widths / sizeof fma_widths[0]))

/* The FMA figures of one dtype: one per width, then the best as "fma.<dtype>". */
static void fma_ceiling(kiln_ctx *ctx, const bench_options *o, bench_device *d, kiln_dtype dt) {
    const char *dn = kiln_dtype_name(dt);
    int best = -1, best_width = 0; /* figure index and width of the fastest */
    char key[48], label[64], why[sizeof d->figs[0].note] = "";
    for (int i = 0; i < N_WIDTHS - (dt == KILN_F32); i++) {
        snprintf(key, sizeof key, "fma.%s.w%d", dn, fma_widths[i]);
        snprintf(label, sizeof label, "FMA %s, width %d", dn, fma_widths[i]);
        bench_figure *f = bench_add(d, BENCH_CEILINGS, key, label, BENCH_GFLOPS);
        if (!f) return;
        kiln_measure m;
        if (kiln_probe_fma(ctx, dt, fma_widths[i], ceiling_repeats(o), &m)) {
            bench_engine_failure(f, "probe");
            /* the first width's reason: the later ones may only say the width is missing */
            if (!why[0]) snprintf(why, sizeof why, "%s", f->note);
        } else {
            bench_from_measure(f, &m);
        }
        if (isfinite(f->median) && (best < 0 || f->median > d->figs[best].median)) {
            best = (int)(f - d->figs);
            best_width = fma_widths[i];
        }
        bench_print_figure(stdout, f);
    }
    snprintf(key, sizeof key, "fma.%s", dn);
    bench_figure copy = best >= 0 ? d->figs[best] : (bench_figure){0};
    bench_figure *f = bench_add(d, BENCH_CEILINGS, key, "", BENCH_GFLOPS);
    if (!f) return;
    d->fma_width[dt == KILN_F16] = best_width;
    if (best >= 0) {
        *f = copy;
        snprintf(f->key, sizeof f->key, "%s", key);
        snprintf(f->label, sizeof f->label, "FMA %s, best (width %d)", dn, best_width);
    } else {
        /* every width failed, usually for one reason (no f16 arithmetic): repeat it */
        snprintf(f->label, sizeof f->label, "FMA %s, best", dn);
        snprintf(f->note, sizeof f->note, "%s", why);
        /* the widths carry any error; the summary row does not count it twice */
    }
    bench_print_figure(stdout, f);
}

/* 64 MiB: past every core-private cache, and within one binding on every Vulkan device
 * (128 MiB is the minimum of maxStorageBufferRange), so each copy is one dispatch. */
static size_t bandwidth_bytes(const bench_options *o) { return (size_t)(o->quick ? 4 : 64) << 20; }

void bench_copy_ceiling(kiln_ctx *ctx, const bench_options *o, bench_device *d) {
    bench_print_section(stdout, BENCH_CEILINGS);
    bench_figure *f = bench_add(d, BENCH_CEILINGS, "copy", "copy bandwidth (read + write)", BENCH_GBPS);
    if (!f) return;
    snprintf(f->shape, sizeof f->shape, "%zu MiB", bandwidth_bytes(o) >> 20);
    kiln_measure m;
    if (kiln_probe_copy(ctx, bandwidth_bytes(o), ceiling_repeats(o), &m))
        bench_engine_failure(f, "probe");
    else
        bench_from_measure(f, &m);
    bench_print_figure(stdout, f);
}

static void bandwidth_ceilings(kiln_ctx *ctx, const bench_options *o, bench_device *d) {
    const size_t bytes = bandwidth_bytes(o);
    char shape[64];
    snprintf(shape, sizeof shape, "%zu MiB", bytes >> 20);
    struct {
        const char *key, *label;
        int kind; /* 0 copy, 1 to device, 2 to host */
    } rows[] = {
        {.key = "copy", .label = "copy bandwidth (read + write)", .kind = 0},
        {.key = "h2d", .label = "host -> device transfer", .kind = 1},
        {.key = "d2h", .label = "device -> host transfer", .kind = 2},
    };
    for (int i = 0; i < 3; i++) {
        bench_figure *f = bench_add(d, BENCH_CEILINGS, rows[i].key, rows[i].label, BENCH_GBPS);
        if (!f) return;
        snprintf(f->shape, sizeof f->shape, "%s", shape);
        kiln_measure m;
        kiln_status s = rows[i].kind == 0 ? kiln_probe_copy(ctx, bytes, ceiling_repeats(o), &m)
                                          : kiln_probe_transfer(ctx, bytes, rows[i].kind == 1, ceiling_repeats(o), &m);
        if (s)
            bench_engine_failure(f, "probe");
        else
            bench_from_measure(f, &m);
        bench_print_figure(stdout, f);
    }
    bench_figure *f = bench_add(d, BENCH_CEILINGS, "dispatch", "dispatch latency", BENCH_US);
    if (!f) return;
    kiln_measure m;
    if (kiln_probe_dispatch(ctx, o->repeat, &m))
        bench_engine_failure(f, "probe");
    else
        bench_from_measure(f, &m);
    bench_print_figure(stdout, f);
}

/* Ceiling runs on a loaded machine: each run is one measurement the scheduler may cut into,
 * so a re-measure takes three times as many. */
#define RECHECK_REPEATS(o) (3 * ceiling_repeats(o))

void bench_relate_compute(kiln_ctx *ctx, const bench_options *o, bench_device *d, bench_figure *f,
                          const char *ceiling_key, int error_above) {
    bench_relate(d, f, ceiling_key);
    if (!(f->pct > 100)) return;
    const kiln_dtype dt = strcmp(ceiling_key, "fma.f16") ? KILN_F32 : KILN_F16;
    const int width = d->fma_width[dt == KILN_F16];
    bench_figure *c = NULL;
    for (int i = 0; i < d->n_figs; i++)
        if (!strcmp(d->figs[i].key, ceiling_key)) c = &d->figs[i];
    double before = bench_ceiling_value(c), again = NAN;
    kiln_measure m;
    if (c && width && kiln_probe_fma(ctx, dt, width, RECHECK_REPEATS(o), &m) == KILN_OK) {
        again = m.max;
        if (m.max > before) {
            bench_from_measure(c, &m);
            printf("  (%s measured again, %d runs, as %s exceeded it: best run %.1f -> %.1f GFLOP/s)\n",
                   ceiling_key, m.repeats, f->label, before, m.max);
        }
    }
    kiln_clear_error();
    bench_relate(d, f, ceiling_key);
    if (!(f->pct > 100)) return;
    /* Only a ceiling that measures the same twice on a quiet machine says its kernel is
     * wrong. One that rose by more than 10% between two measurements was cut short by other
     * processes; and with more runnable threads than CPUs, a ceiling kernel that needs
     * every core loses whole time slices that a peer on fewer threads (OpenBLAS runs small
     * products on one) does not. */
    if (isfinite(again) && again > 1.1 * before) {
        snprintf(f->note, sizeof f->note,
                 "note: above the FMA ceiling, which moved from %.0f to %.0f between two measurements "
                 "(a loaded machine): not counted",
                 before, again);
        return;
    }
    double load;
    const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    if (getloadavg(&load, 1) == 1 && cpus > 0 && load > (double)cpus + 1.0) {
        snprintf(f->note, sizeof f->note,
                 "note: above the FMA ceiling on a loaded machine (load average %.1f on %ld CPUs): not counted", load,
                 cpus);
        return;
    }
    f->error = error_above;
    snprintf(f->note, sizeof f->note, "%s: above the FMA ceiling, measured twice%s", error_above ? "error" : "note",
             error_above ? ": the ceiling kernel is wrong" : "");
}

/* About as long as one run of the FMA ceiling (kiln/probe.h): on a loaded machine a short
 * run slips between other processes' time slices more often than a long one, so the best
 * of many short sgemm runs could beat the best of the ceiling's long runs for no reason
 * the chip explains. */
#define SGEMM_RUN_S 0.03

/* sgemm at 1024^3 (512^3 in a --quick run): a square product large enough for OpenBLAS's
 * best rate on every thread. Each timed run is as many products as last SGEMM_RUN_S. */
static void openblas_check(kiln_ctx *ctx, const bench_options *o, bench_device *d) {
    const int m = o->quick ? 512 : 1024, k = m, n = m;
    bench_figure *f = bench_add(d, BENCH_CEILINGS, "sgemm.openblas", "OpenBLAS sgemm on the host", BENCH_GFLOPS);
    if (!f) return;
    snprintf(f->shape, sizeof f->shape, "%dx%dx%d", m, n, k);
#ifdef KILN_BENCH_OPENBLAS
    const int runs = ceiling_repeats(o);
    float *a = malloc((size_t)m * k * sizeof *a), *b = malloc((size_t)k * n * sizeof *b);
    float *c = malloc((size_t)m * n * sizeof *c);
    double *t = malloc((size_t)runs * sizeof *t);
    if (!a || !b || !c || !t) {
        bench_not_measured(f, 1, "out of host memory");
    } else {
        bench_fill_uniform(a, (int64_t)m * k, 1, -1, 1);
        bench_fill_uniform(b, (int64_t)k * n, 2, -1, 1);
        int calls = 1; /* products per timed run, from the warm-up's last product */
        for (int r = -2; r < runs; r++) {
            double t0 = progress_now();
            for (int i = 0; i < calls; i++)
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, a, k, b, n, 0.0f, c, n);
            const double dt = progress_now() - t0;
            if (r == -1) calls = dt >= SGEMM_RUN_S ? 1 : dt <= SGEMM_RUN_S / 1000 ? 1000 : (int)ceil(SGEMM_RUN_S / dt);
            if (r >= 0) t[r] = dt / calls;
        }
        f->repeats = runs;
        f->wall_s = f->device_s = bench_median(t, runs);
        const double flops = 2.0 * m * n * k;
        f->median = flops / f->wall_s * 1e-9;
        f->min = flops / t[runs - 1] * 1e-9; /* t is sorted */
        f->max = flops / t[0] * 1e-9;
        if (!strcmp(d->backend, "cpu")) {
            /* the same cores: sgemm cannot beat their FMA ceiling */
            bench_relate_compute(ctx, o, d, f, "fma.f32", 1);
        } else {
            bench_relate(d, f, "fma.f32");
            if (f->pct > 100) snprintf(f->note, sizeof f->note, "the host CPU does more than this device's ceiling");
        }
    }
    free(a), free(b), free(c), free(t);
    /* OpenBLAS's idle threads: the next device measurement should not share the cores */
    bench_settle();
#else
    (void)ctx, (void)o;
    bench_not_measured(f, 0, "this build has no OpenBLAS (install libopenblas-dev)");
#endif
    bench_print_figure(stdout, f);
}

void bench_ceilings(kiln_ctx *ctx, const bench_options *o, bench_device *d) {
    bench_say(d, "ceilings");
    bench_print_section(stdout, BENCH_CEILINGS);
    fma_ceiling(ctx, o, d, KILN_F32);
    fma_ceiling(ctx, o, d, KILN_F16);
    bandwidth_ceilings(ctx, o, d);
    openblas_check(ctx, o, d);
}
