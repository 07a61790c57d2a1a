/* `kiln bench gemm`: single-precision GEMM throughput of one kiln backend, with the peers
 * measured in the same run on the same machine: OpenBLAS's cblas_sgemm always (when the
 * build found it), and CLBlast's CLBlastSgemm on the same OpenCL device when the backend is
 * opencl. One line per size:
 *
 *   gemm 1024x1024x1024  kiln 123.4 GFLOP/s  openblas 345.6 GFLOP/s  ratio 0.36
 *
 * (ratio = kiln / peer). Each figure is the median of --repeat timed runs after warm-up
 * runs; kiln's runs end with kiln_sync. Before timing, kiln's product is checked against the
 * peer's, so a fast wrong answer cannot pass as a result. The libraries take turns, with a
 * pause between, because both keep their idle threads spinning for a while after a call and
 * would otherwise steal each other's cores. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef KILN_BENCH_OPENBLAS
#include <cblas.h>
#endif
#ifdef KILN_BENCH_CLBLAST
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <clblast_c.h>
#endif

#include "bench.h"
#include "cli.h"
#include "device.h"
#include "kiln/kiln.h"
#include "progress.h"

#define BENCH_MAX_SIZES 32
#define BENCH_WARMUP 2
/* normalized squared error allowed between kiln's product and the peer's: f32 sums in
 * different orders agree to about 1e-13 */
#define BENCH_MAX_ERROR 1e-8

typedef struct gemm_size {
    int64_t m, n, k;
} gemm_size;

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
            if (nd == 3 || cli_parse_int(d, &dims[nd]) || dims[nd] < 1 || dims[nd] > 65536)
                return host_error("--sizes: '%s' is not a size (N, or MxNxK, each 1 to 65536)", text);
            nd++;
        }
        if (nd != 1 && nd != 3) return host_error("--sizes: '%s': a size is N or MxNxK", text);
        out[*count] = nd == 1 ? (gemm_size){dims[0], dims[0], dims[0]} : (gemm_size){dims[0], dims[1], dims[2]};
        (*count)++;
    }
    if (*count == 0) return host_error("--sizes: no sizes given");
    return 0;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Lets the other library's spinning worker threads fall asleep before the next timing. */
static void settle(void) {
    struct timespec ts = {0, 300 * 1000 * 1000};
    nanosleep(&ts, NULL);
}

static double normalized_error(const float *ref, const float *x, int64_t n) {
    double num = 0, den = 0;
    for (int64_t i = 0; i < n; i++) {
        double d = (double)x[i] - ref[i];
        num += d * d;
        den += (double)ref[i] * ref[i];
    }
    return isfinite(num) ? num / (den > 1e-30 ? den : 1e-30) : INFINITY;
}

/* ---- kiln ---- */

/* Median seconds of kiln_matmul(A, B) over `repeat` runs; the product goes to c.
 * Returns 0, or 1 after printing an error. */
static int time_kiln(kiln_ctx *ctx, const gemm_size *s, const float *a, const float *b,
                     float *c, int repeat, double *secs) {
    kiln_tensor *ta = kiln_tensor_2d(ctx, KILN_F32, s->m, s->k);
    kiln_tensor *tb = ta ? kiln_tensor_2d(ctx, KILN_F32, s->k, s->n) : NULL;
    double *t = malloc((size_t)repeat * sizeof *t);
    int rc = 1;
    if (!tb || !t) {
        host_engine_error("cannot allocate the GEMM operands");
        goto done;
    }
    if (kiln_upload_f32(ta, a, s->m * s->k) || kiln_upload_f32(tb, b, s->k * s->n)) {
        host_engine_error("cannot upload the GEMM operands");
        goto done;
    }
    kiln_set_grad_enabled(ctx, 0);
    for (int r = 0; r < BENCH_WARMUP + repeat; r++) {
        double t0 = progress_now();
        kiln_tensor *tc = kiln_matmul(ta, tb, NULL, 0, 0);
        if (!tc || kiln_sync(ctx)) {
            host_engine_error("kiln matmul failed");
            goto done;
        }
        if (r >= BENCH_WARMUP) t[r - BENCH_WARMUP] = progress_now() - t0;
        if (r == 0 && kiln_download_f32(tc, c, s->m * s->n)) {
            host_engine_error("cannot read the product back");
            goto done;
        }
        kiln_step_reset(ctx);
    }
    *secs = median(t, repeat);
    rc = 0;
done:
    free(t);
    kiln_tensor_free(ta);
    kiln_tensor_free(tb);
    return rc;
}

/* ---- OpenBLAS ---- */

#ifdef KILN_BENCH_OPENBLAS
static int time_openblas(const gemm_size *s, const float *a, const float *b, float *c,
                         int repeat, double *secs) {
    double *t = malloc((size_t)repeat * sizeof *t);
    if (!t) return host_error("out of host memory");
    for (int r = 0; r < BENCH_WARMUP + repeat; r++) {
        double t0 = progress_now();
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)s->m, (int)s->n, (int)s->k, 1.0f, a,
                    (int)s->k, b, (int)s->n, 0.0f, c, (int)s->n);
        if (r >= BENCH_WARMUP) t[r - BENCH_WARMUP] = progress_now() - t0;
    }
    *secs = median(t, repeat);
    free(t);
    return 0;
}
#endif

/* ---- CLBlast, on the OpenCL device kiln runs on ---- */

#ifdef KILN_BENCH_CLBLAST
typedef struct clblast_peer {
    cl_context context;
    cl_command_queue queue;
} clblast_peer;

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

static int time_clblast(clblast_peer *p, const gemm_size *s, const float *a, const float *b,
                        float *c, int repeat, double *secs) {
    cl_int err = CL_SUCCESS, e2 = CL_SUCCESS, e3 = CL_SUCCESS;
    size_t sa = (size_t)(s->m * s->k) * 4, sb = (size_t)(s->k * s->n) * 4, sc = (size_t)(s->m * s->n) * 4;
    cl_mem ba = clCreateBuffer(p->context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sa, (void *)a, &err);
    cl_mem bb = clCreateBuffer(p->context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sb, (void *)b, &e2);
    cl_mem bc = clCreateBuffer(p->context, CL_MEM_READ_WRITE, sc, NULL, &e3);
    double *t = malloc((size_t)repeat * sizeof *t);
    int rc = 1;
    if (err != CL_SUCCESS || e2 != CL_SUCCESS || e3 != CL_SUCCESS || !t) {
        host_error("CLBlast: cannot allocate %zu bytes of OpenCL buffers", sa + sb + sc);
        goto done;
    }
    for (int r = 0; r < BENCH_WARMUP + repeat; r++) {
        double t0 = progress_now();
        CLBlastStatusCode st = CLBlastSgemm(CLBlastLayoutRowMajor, CLBlastTransposeNo, CLBlastTransposeNo,
                                            (size_t)s->m, (size_t)s->n, (size_t)s->k, 1.0f, ba, 0, (size_t)s->k,
                                            bb, 0, (size_t)s->n, 0.0f, bc, 0, (size_t)s->n, &p->queue, NULL);
        if (st != CLBlastSuccess || clFinish(p->queue) != CL_SUCCESS) {
            host_error("CLBlastSgemm failed with status %d", (int)st);
            goto done;
        }
        if (r >= BENCH_WARMUP) t[r - BENCH_WARMUP] = progress_now() - t0;
    }
    if (clEnqueueReadBuffer(p->queue, bc, CL_TRUE, 0, sc, c, 0, NULL, NULL) != CL_SUCCESS) {
        host_error("CLBlast: cannot read the product back");
        goto done;
    }
    *secs = median(t, repeat);
    rc = 0;
done:
    free(t);
    if (ba) clReleaseMemObject(ba);
    if (bb) clReleaseMemObject(bb);
    if (bc) clReleaseMemObject(bc);
    return rc;
}
#endif

/* ---- the command ---- */

static double gflops(const gemm_size *s, double secs) {
    return 2.0 * (double)s->m * (double)s->n * (double)s->k / secs * 1e-9;
}

/* Checks kiln's product against a peer's; prints an error and returns 1 when they differ. */
static int agree(const char *peer, const gemm_size *s, const float *ref, const float *c) {
    double err = normalized_error(ref, c, s->m * s->n);
    if (err <= BENCH_MAX_ERROR) return 0;
    return host_error("kiln's %lldx%lldx%lld product differs from %s's (normalized error %.3g): not timing a wrong result",
                      (long long)s->m, (long long)s->n, (long long)s->k, peer, err);
}

int kiln_bench_gemm_main(int argc, char **argv) {
    const char *backend = "cpu", *sizes_text = "256,512,1024,2048";
    int device = -1, repeat = 10;
    cli_opt opts[] = {
        {"--backend", CLI_STRING, &backend, "NAME", HOST_BACKEND_HELP, 0, 0, 0},
        {"--device", CLI_INT, &device, "N", HOST_DEVICE_HELP, -1, 1024, 0},
        {"--sizes", CLI_STRING, &sizes_text, "LIST", "comma-separated sizes: N (N x N x N) or MxNxK", 0, 0, 0},
        {"--repeat", CLI_INT, &repeat, "N", "timed runs per size (the median is reported)", 1, 100000, 0},
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
#ifdef KILN_BENCH_CLBLAST
    clblast_peer clb = {0};
    int have_clblast = !strcmp(kiln_backend_name(ctx), "opencl") && !clblast_open(kiln_device_name(ctx), &clb);
#endif
    rc = 0;
    for (int i = 0; rc == 0 && i < n_sizes; i++) {
        const gemm_size *s = &sizes[i];
        float *a = malloc((size_t)(s->m * s->k) * sizeof *a), *b = malloc((size_t)(s->k * s->n) * sizeof *b);
        float *c = malloc((size_t)(s->m * s->n) * sizeof *c), *ref = malloc((size_t)(s->m * s->n) * sizeof *ref);
        if (!a || !b || !c || !ref) {
            rc = host_error("out of host memory for a %lldx%lldx%lld GEMM", (long long)s->m, (long long)s->n, (long long)s->k);
        } else {
            /* uniform in [-1, 1), the same operands for every library */
            for (int64_t j = 0; j < s->m * s->k; j++) a[j] = kiln_rng_uniform(1, 1, (uint64_t)j) * 2 - 1;
            for (int64_t j = 0; j < s->k * s->n; j++) b[j] = kiln_rng_uniform(1, 2, (uint64_t)j) * 2 - 1;
            char line[512];
            int at = snprintf(line, sizeof line, "gemm %lldx%lldx%lld", (long long)s->m, (long long)s->n, (long long)s->k);
            double t_kiln = 0;
            rc = time_kiln(ctx, s, a, b, c, repeat, &t_kiln);
            if (rc == 0) at += snprintf(line + at, sizeof line - (size_t)at, "  kiln %.1f GFLOP/s", gflops(s, t_kiln));
#ifdef KILN_BENCH_OPENBLAS
            double t_blas = 0;
            if (rc == 0) {
                settle();
                rc = time_openblas(s, a, b, ref, repeat, &t_blas);
            }
            if (rc == 0) rc = agree("OpenBLAS", s, ref, c);
            if (rc == 0)
                at += snprintf(line + at, sizeof line - (size_t)at, "  openblas %.1f GFLOP/s  ratio %.2f", gflops(s, t_blas),
                               t_blas / t_kiln);
#endif
#ifdef KILN_BENCH_CLBLAST
            double t_clb = 0;
            if (rc == 0 && have_clblast) {
                rc = time_clblast(&clb, s, a, b, ref, repeat, &t_clb);
                if (rc == 0) rc = agree("CLBlast", s, ref, c);
                if (rc == 0)
                    at += snprintf(line + at, sizeof line - (size_t)at, "  clblast %.1f GFLOP/s  ratio %.2f",
                                   gflops(s, t_clb), t_clb / t_kiln);
            }
#endif
            if (rc == 0) {
                printf("%s\n", line);
                fflush(stdout);
                settle();
            }
        }
        free(a), free(b), free(c), free(ref);
    }
#ifdef KILN_BENCH_CLBLAST
    if (have_clblast) clblast_close(&clb);
#endif
    kiln_close(ctx);
    return rc;
}
