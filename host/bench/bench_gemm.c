/* `kiln bench gemm`: single-precision GEMM throughput of one kiln backend, with the peers
 * measured in the same run on the same machine: OpenBLAS's cblas_sgemm always (when the
 * build found it), and CLBlast's CLBlastSgemm on the same OpenCL device when the backend is
 * opencl. One line per size:
 *
 *   gemm 1024x1024x1024  kiln 123.4 GFLOP/s  openblas 345.6 GFLOP/s  ratio 0.36
 *
 * (ratio = kiln / peer). Each figure is the median of --repeat timed runs after warm-up
 * runs; kiln's runs end with kiln_sync. Before timing, kiln's product is checked against the
 * peer's, so a fast wrong answer cannot pass as a result.
 *
 * The libraries take turns in rounds (a few runs of kiln, a few of each peer, again), with
 * a pause between turns: both keep their idle threads spinning for a while after a call and
 * would otherwise steal each other's cores, and on a machine shared with other work, bursts
 * of load then fall on every library alike instead of on one library's turn. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef KILN_BENCH_OPENBLAS
#include <cblas.h>
#endif
#ifdef KILN_BENCH_CLBLAST
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <clblast_c.h>
#endif

#include "bench/bench.h"
#include "formats/text_number.h"
#include "kiln/kiln.h"
#include "run/cli.h"
#include "run/device.h"
#include "run/progress.h"

#define BENCH_MAX_SIZES 32
#define BENCH_WARMUP 2 /* untimed runs before each library's first turn */
#define BENCH_ROUNDS 5 /* turns per library (fewer when --repeat is smaller) */
#define BENCH_TURN_WARMUP_S 0.02 /* untimed runs at the start of every turn, in seconds */
/* normalized squared error allowed between kiln's product and the peer's: f32 sums in
 * different orders agree to about 1e-13 */
#define BENCH_MAX_ERROR 1e-8

typedef struct gemm_size {
    int64_t m, n, k;
} gemm_size;

/* CLBlast's context and queue on kiln's OpenCL device (defined only with CLBlast). */
typedef struct clblast_peer clblast_peer;

/* "256,512,1024x4096x1024": a size is S (square) or MxNxK. */
static int parse_sizes(const char *text, gemm_size *out, int *count) {
    *count = 0;
    char buf[512];
    if (strlen(text) >= sizeof buf) return host_error("--sizes is too long");
    strcpy(buf, text);
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (*count == BENCH_MAX_SIZES) return host_error("--sizes: at most %d sizes", BENCH_MAX_SIZES);
        int64_t dims[3];
        int nd = 0;
        char *inner = NULL;
        for (char *d = strtok_r(tok, "x", &inner); d; d = strtok_r(NULL, "x", &inner)) {
            if (nd == 3 || text_to_int64(d, &dims[nd]) || dims[nd] < 1 || dims[nd] > 65536)
                return host_error("--sizes: '%s' is not a size (N, or MxNxK, each 1 to 65536)", text);
            nd++;
        }
        if (nd != 1 && nd != 3) return host_error("--sizes: '%s': a size is N or MxNxK", text);
        out[*count] = nd == 1 ? (gemm_size){.m = dims[0], .n = dims[0], .k = dims[0]}
                              : (gemm_size){.m = dims[0], .n = dims[1], .k = dims[2]};
        (*count)++;
    }
    if (*count == 0) return host_error("--sizes: no sizes given");
    return 0;
}

/* ---- kiln ---- */

typedef struct kiln_side {
    kiln_ctx *ctx;
    kiln_tensor *a, *b;
} kiln_side;

static int kiln_setup(kiln_side *k, const gemm_size *s, const float *a, const float *b) {
    k->a = kiln_tensor_2d(k->ctx, KILN_F32, s->m, s->k);
    k->b = k->a ? kiln_tensor_2d(k->ctx, KILN_F32, s->k, s->n) : NULL;
    if (!k->b) return host_engine_error("cannot allocate the GEMM operands");
    if (kiln_upload_f32(k->a, a, s->m * s->k) || kiln_upload_f32(k->b, b, s->k * s->n))
        return host_engine_error("cannot upload the GEMM operands");
    kiln_set_grad_enabled(k->ctx, 0);
    return 0;
}

static void kiln_teardown(kiln_side *k) {
    kiln_tensor_free(k->a);
    kiln_tensor_free(k->b);
    k->a = k->b = NULL;
}

/* `runs` products, their times into t (NULL: untimed); the first product into c when c is
 * not NULL. */
static int kiln_runs(kiln_side *k, const gemm_size *s, int runs, double *t, float *c) {
    for (int r = 0; r < runs; r++) {
        double t0 = progress_now();
        kiln_tensor *tc = kiln_matmul(k->a, k->b, NULL, 0, 0);
        if (!tc || kiln_sync(k->ctx)) return host_engine_error("kiln matmul failed");
        if (t) t[r] = progress_now() - t0;
        if (r == 0 && c && kiln_download_f32(tc, c, s->m * s->n)) return host_engine_error("cannot read the product back");
        kiln_step_reset(k->ctx);
    }
    return 0;
}

/* ---- OpenBLAS ---- */

#ifdef KILN_BENCH_OPENBLAS
static void openblas_runs(const gemm_size *s, const float *a, const float *b, float *c, int runs, double *t) {
    for (int r = 0; r < runs; r++) {
        double t0 = progress_now();
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)s->m, (int)s->n, (int)s->k, 1.0f, a,
                    (int)s->k, b, (int)s->n, 0.0f, c, (int)s->n);
        if (t) t[r] = progress_now() - t0;
    }
}
#endif

/* ---- CLBlast, on the OpenCL device kiln runs on ---- */

#ifdef KILN_BENCH_CLBLAST
struct clblast_peer {
    cl_context context;
    cl_command_queue queue;
};

/* Finds the device kiln names "NAME (PLATFORM)" and makes a context and queue on it.
 * Returns 0, or 1 after printing why CLBlast is left out. */
static int clblast_open(const char *kiln_device, clblast_peer *p) {
    cl_platform_id plats[16];
    cl_uint np = 0;
    if (clGetPlatformIDs(16, plats, &np) != CL_SUCCESS) np = 0;
    for (cl_uint i = 0; i < np && i < 16; i++) {
        char plat[256] = "";
        clGetPlatformInfo(plats[i], CL_PLATFORM_NAME, sizeof plat, plat, NULL);
        cl_device_id devs[16];
        cl_uint nd = 0;
        if (clGetDeviceIDs(plats[i], CL_DEVICE_TYPE_ALL, 16, devs, &nd) != CL_SUCCESS) continue;
        for (cl_uint j = 0; j < nd && j < 16; j++) {
            char name[256] = "", full[600];
            clGetDeviceInfo(devs[j], CL_DEVICE_NAME, sizeof name, name, NULL);
            snprintf(full, sizeof full, "%s (%s)", name, plat);
            if (strcmp(full, kiln_device)) continue;
            cl_int err;
            p->context = clCreateContext(NULL, 1, &devs[j], NULL, NULL, &err);
            if (err != CL_SUCCESS) break;
            p->queue = clCreateCommandQueue(p->context, devs[j], 0, &err);
            if (err != CL_SUCCESS) {
                clReleaseContext(p->context);
                break;
            }
            return 0;
        }
    }
    fprintf(stderr, "kiln bench gemm: CLBlast left out: no OpenCL device named '%s' could be opened\n", kiln_device);
    return 1;
}

static void clblast_close(clblast_peer *p) {
    if (p->queue) clReleaseCommandQueue(p->queue);
    if (p->context) clReleaseContext(p->context);
}

typedef struct clblast_bufs {
    cl_mem a, b, c;
} clblast_bufs;

static void clblast_free_bufs(clblast_bufs *m) {
    if (m->a) clReleaseMemObject(m->a);
    if (m->b) clReleaseMemObject(m->b);
    if (m->c) clReleaseMemObject(m->c);
    m->a = m->b = m->c = NULL;
}

static int clblast_setup(clblast_peer *p, clblast_bufs *m, const gemm_size *s, const float *a, const float *b) {
    cl_int e1 = CL_SUCCESS, e2 = CL_SUCCESS, e3 = CL_SUCCESS;
    size_t sa = (size_t)(s->m * s->k) * 4, sb = (size_t)(s->k * s->n) * 4, sc = (size_t)(s->m * s->n) * 4;
    m->a = clCreateBuffer(p->context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sa, (void *)a, &e1);
    m->b = clCreateBuffer(p->context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sb, (void *)b, &e2);
    m->c = clCreateBuffer(p->context, CL_MEM_READ_WRITE, sc, NULL, &e3);
    if (e1 != CL_SUCCESS || e2 != CL_SUCCESS || e3 != CL_SUCCESS)
        return host_error("CLBlast: cannot allocate %zu bytes of OpenCL buffers", sa + sb + sc);
    return 0;
}

/* Like kiln_runs, for CLBlastSgemm. */
static int clblast_runs(clblast_peer *p, clblast_bufs *m, const gemm_size *s, int runs, double *t, float *c) {
    for (int r = 0; r < runs; r++) {
        double t0 = progress_now();
        CLBlastStatusCode st = CLBlastSgemm(CLBlastLayoutRowMajor, CLBlastTransposeNo, CLBlastTransposeNo,
                                            (size_t)s->m, (size_t)s->n, (size_t)s->k, 1.0f, m->a, 0, (size_t)s->k,
                                            m->b, 0, (size_t)s->n, 0.0f, m->c, 0, (size_t)s->n, &p->queue, NULL);
        if (st != CLBlastSuccess || clFinish(p->queue) != CL_SUCCESS)
            return host_error("CLBlastSgemm failed with status %d", (int)st);
        if (t) t[r] = progress_now() - t0;
        if (r == 0 && c &&
            clEnqueueReadBuffer(p->queue, m->c, CL_TRUE, 0, (size_t)(s->m * s->n) * 4, c, 0, NULL, NULL) != CL_SUCCESS)
            return host_error("CLBlast: cannot read the product back");
    }
    return 0;
}
#endif

/* ---- the command ---- */

static double gflops(const gemm_size *s, double secs) {
    return 2.0 * (double)s->m * (double)s->n * (double)s->k / secs * 1e-9;
}

#if defined(KILN_BENCH_OPENBLAS) || defined(KILN_BENCH_CLBLAST)
static double normalized_error(const float *ref, const float *x, int64_t n) {
    double num = 0, den = 0;
    for (int64_t i = 0; i < n; i++) {
        double d = (double)x[i] - ref[i];
        num += d * d;
        den += (double)ref[i] * ref[i];
    }
    return isfinite(num) ? num / (den > 1e-30 ? den : 1e-30) : INFINITY;
}

/* Checks kiln's product against a peer's; prints an error and returns 1 when they differ. */
static int agree(const char *peer, const gemm_size *s, const float *ref, const float *c) {
    double err = normalized_error(ref, c, s->m * s->n);
    if (err <= BENCH_MAX_ERROR) return 0;
    return host_error("kiln's %lldx%lldx%lld product differs from %s's (normalized error %.3g): not timing a wrong result",
                      (long long)s->m, (long long)s->n, (long long)s->k, peer, err);
}
#endif

/* One size: warm-up, then rounds of turns, then the line. Returns 0 or 1 (error printed). */
static int bench_size(kiln_side *ks, clblast_peer *clb, const gemm_size *s, const float *a, const float *b,
                      float *c, float *ref, int repeat, char *line, size_t size) {
    const int rounds = repeat < BENCH_ROUNDS ? repeat : BENCH_ROUNDS;
    double *t = malloc((size_t)repeat * 3 * sizeof *t);
    double *t_kiln = t, *t_blas = t + repeat, *t_clb = t + 2 * repeat;
    int rc = t ? kiln_setup(ks, s, a, b) : host_error("out of host memory");
#ifdef KILN_BENCH_CLBLAST
    clblast_bufs cm = {0};
    if (rc == 0 && clb) rc = clblast_setup(clb, &cm, s, a, b);
#endif
    /* warm-up; each peer's first product checks kiln's */
    if (rc == 0) rc = kiln_runs(ks, s, BENCH_WARMUP, NULL, c);
#ifdef KILN_BENCH_OPENBLAS
    if (rc == 0) {
        openblas_runs(s, a, b, ref, BENCH_WARMUP, NULL);
        rc = agree("OpenBLAS", s, ref, c);
    }
#endif
#ifdef KILN_BENCH_CLBLAST
    if (rc == 0 && clb) rc = clblast_runs(clb, &cm, s, BENCH_WARMUP, NULL, ref);
    if (rc == 0 && clb) rc = agree("CLBlast", s, ref, c);
#endif
    /* Each turn starts with untimed runs (at least one, and at least BENCH_TURN_WARMUP_S):
     * after the pause, thread pools are asleep and the first calls pay for waking them
     * (on a VM, a halted virtual CPU takes milliseconds), which a program calling GEMMs
     * back to back does not. */
    for (int r = 0, done = 0; rc == 0 && r < rounds; r++) {
        const int runs = (repeat - done) / (rounds - r); /* spreads the runs evenly */
        bench_settle();
        double t0 = progress_now();
        do rc = kiln_runs(ks, s, 1, NULL, NULL);
        while (rc == 0 && progress_now() - t0 < BENCH_TURN_WARMUP_S);
        if (rc == 0) rc = kiln_runs(ks, s, runs, t_kiln + done, NULL);
#ifdef KILN_BENCH_OPENBLAS
        bench_settle();
        t0 = progress_now();
        do openblas_runs(s, a, b, ref, 1, NULL);
        while (progress_now() - t0 < BENCH_TURN_WARMUP_S);
        openblas_runs(s, a, b, ref, runs, t_blas + done);
#endif
#ifdef KILN_BENCH_CLBLAST
        t0 = progress_now();
        if (clb)
            do rc = rc ? rc : clblast_runs(clb, &cm, s, 1, NULL, NULL);
            while (rc == 0 && progress_now() - t0 < BENCH_TURN_WARMUP_S);
        if (rc == 0 && clb) rc = clblast_runs(clb, &cm, s, runs, t_clb + done, NULL);
#endif
        done += runs;
    }
    if (rc == 0) {
        const double sk = bench_median(t_kiln, repeat);
        int at = snprintf(line, size, "gemm %lldx%lldx%lld  kiln %.1f GFLOP/s", (long long)s->m, (long long)s->n,
                          (long long)s->k, gflops(s, sk));
#ifdef KILN_BENCH_OPENBLAS
        const double sb = bench_median(t_blas, repeat);
        at += snprintf(line + at, size - (size_t)at, "  openblas %.1f GFLOP/s  ratio %.2f", gflops(s, sb), sb / sk);
#endif
#ifdef KILN_BENCH_CLBLAST
        if (clb) {
            const double sc = bench_median(t_clb, repeat);
            at += snprintf(line + at, size - (size_t)at, "  clblast %.1f GFLOP/s  ratio %.2f", gflops(s, sc), sc / sk);
        }
#endif
        (void)at;
    }
    (void)t_blas, (void)t_clb, (void)ref, (void)clb; /* unused when a peer is not built */
#ifdef KILN_BENCH_CLBLAST
    clblast_free_bufs(&cm);
#endif
    kiln_teardown(ks);
    free(t);
    return rc;
}

int kiln_bench_gemm_main(int argc, char **argv) {
    const char *backend = "cpu", *sizes_text = "256,512,1024,2048";
    int device = -1, repeat = 10;
    cli_opt opts[] = {
        host_backend_option(&backend),
        {.name = "--device", .kind = CLI_INT, .target = &device, .meta = "N",
         .help = HOST_DEVICE_HELP, .min = -1, .max = 1024},
        {.name = "--sizes", .kind = CLI_STRING, .target = &sizes_text, .meta = "LIST",
         .help = "comma-separated sizes: N (N x N x N) or MxNxK"},
        {.name = "--repeat", .kind = CLI_INT, .target = &repeat, .meta = "N",
         .help = "timed runs per size (the median is reported)", .min = 1, .max = 100000},
    };
    const char *summary = "single-precision GEMM throughput of a kiln backend against OpenBLAS (and CLBlast "
                          "on OpenCL), measured in the same run";
    int rc = cli_parse("bench gemm", summary, argc, argv, 1, opts, (int)(sizeof opts / sizeof opts[0]));
    if (rc) return rc < 0 ? 1 : 0;
    gemm_size sizes[BENCH_MAX_SIZES];
    int n_sizes;
    if (parse_sizes(sizes_text, sizes, &n_sizes)) return 1;

    kiln_ctx *ctx = host_open_device(backend, device);
    if (!ctx) return 1;
    host_say_device("bench gemm", ctx);
#ifndef KILN_BENCH_OPENBLAS
    fprintf(stderr, "kiln bench gemm: this build has no OpenBLAS to compare with (install libopenblas-dev)\n");
#endif
    clblast_peer *clb = NULL; /* CLBlast on kiln's device, when the backend is opencl */
#ifdef KILN_BENCH_CLBLAST
    struct clblast_peer clb_peer = {0};
    if (!strcmp(kiln_backend_name(ctx), "opencl") && !clblast_open(kiln_device_name(ctx), &clb_peer)) clb = &clb_peer;
#endif
    kiln_side ks = {.ctx = ctx};
    rc = 0;
    for (int i = 0; rc == 0 && i < n_sizes; i++) {
        const gemm_size *s = &sizes[i];
        float *a = malloc((size_t)(s->m * s->k) * sizeof *a), *b = malloc((size_t)(s->k * s->n) * sizeof *b);
        float *c = malloc((size_t)(s->m * s->n) * sizeof *c), *ref = malloc((size_t)(s->m * s->n) * sizeof *ref);
        char line[512];
        if (!a || !b || !c || !ref) {
            rc = host_error("out of host memory for a %lldx%lldx%lld GEMM", (long long)s->m, (long long)s->n, (long long)s->k);
        } else {
            /* uniform in [-1, 1), the same operands for every library */
            for (int64_t j = 0; j < s->m * s->k; j++) a[j] = kiln_rng_uniform(1, 1, (uint64_t)j) * 2 - 1;
            for (int64_t j = 0; j < s->k * s->n; j++) b[j] = kiln_rng_uniform(1, 2, (uint64_t)j) * 2 - 1;
            rc = bench_size(&ks, clb, s, a, b, c, ref, repeat, line, sizeof line);
            if (rc == 0) {
                printf("%s\n", line);
                fflush(stdout);
                bench_settle();
            }
        }
        free(a), free(b), free(c), free(ref);
    }
#ifdef KILN_BENCH_CLBLAST
    if (clb) clblast_close(clb);
#endif
    kiln_close(ctx);
    return rc;
}
