/* One-token products with quantized matrices on one CPU thread, kiln against ggml (llama.cpp's
 * CPU backend, as node-llama-cpp ships it), on the same bytes: the kernels' speed, apart
 * from the rest of decoding. Built and run by scripts/bench_qmatmul.sh.
 *
 * Each "layer" is GPT-2 small's MLP pair, a [3072, 768] and a [768, 3072] matrix (n outputs,
 * k inputs); a pass multiplies one activation row by every layer's two matrices, as decoding
 * a token does. With --layers 12 the weights outgrow the caches, as GPT-2's body does; with
 * --layers 1 they stay in L2/L3 and the figure is the kernel's arithmetic. ggml gets its
 * weights in the buffer llama.cpp would load them into (weights_buffer).
 *
 * Printed per format: weight GB/s of each side (the median of --rounds rounds of --passes
 * passes, kiln and ggml interleaved round by round), their ratio, the same for the best
 * round (on a shared machine, the round that other load disturbed least), and the largest difference
 * of their outputs relative to the output's largest magnitude (both round the activations as
 * ggml does, so only the f32 summation order differs). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml.h"
#include "kiln/kiln.h"

enum { MAX_LAYERS = 64, MAX_ROUNDS = 31 };
static const int64_t shapes[2][2] = {{3072, 768}, {768, 3072}}; /* {n, k} */

/* The calling thread's CPU time: both sides run on it alone (one OpenMP thread, ggml's
 * n_threads 1), and on a shared machine the time other processes hold the core is left out. */
static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static float frand(uint32_t *s) {
    *s = *s * 1664525u + 1013904223u;
    return (float)(*s >> 8) / 16777216.0f - 0.5f;
}

static void die(const char *what) {
    fprintf(stderr, "bench_qmatmul: %s\n", what);
    exit(1);
}

/* ---- ggml ---- */
typedef struct ggml_side {
    ggml_backend_t backend;
    struct ggml_context *ctx, *wctx;
    ggml_backend_buffer_t buffers[2];
    struct ggml_cgraph *graph;
    struct ggml_tensor *x, *y[MAX_LAYERS][2];
    const char *buffer; /* the weights' buffer type */
} ggml_side;

static ggml_backend_dev_t g_dev;
static ggml_backend_t g_backend;

static void ggml_open(const char *lib_dir) {
    ggml_backend_load_all_from_path(lib_dir);
    g_dev = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);
    if (!g_dev) die("no ggml CPU backend in that folder");
    g_backend = ggml_backend_dev_init(g_dev, NULL);
    ggml_backend_reg_t reg = ggml_backend_dev_backend_reg(g_dev);
    ggml_backend_set_n_threads_t set_threads =
        (ggml_backend_set_n_threads_t)ggml_backend_reg_get_proc_address(reg, "ggml_backend_set_n_threads");
    if (!set_threads) die("ggml's CPU backend has no ggml_backend_set_n_threads");
    set_threads(g_backend, 1);
}

/* The buffer llama.cpp loads a weight of this type into: the repack buffer for the types
 * ggml-cpu/repack.cpp interleaves on AVX2 at this version (Q4_0, Q4_K; rows a multiple of 8),
 * else the plain CPU buffer. Its set_tensor aborts on types it has no layout for. */
static ggml_backend_buffer_type_t weights_buffer(int ggml_type) {
    ggml_backend_reg_t reg = ggml_backend_dev_backend_reg(g_dev);
    ggml_backend_dev_get_extra_bufts_t extra =
        (ggml_backend_dev_get_extra_bufts_t)ggml_backend_reg_get_proc_address(reg, "ggml_backend_dev_get_extra_bufts");
    if ((ggml_type == GGML_TYPE_Q4_0 || ggml_type == GGML_TYPE_Q4_K) && extra && extra(g_dev))
        for (ggml_backend_buffer_type_t *b = extra(g_dev); *b; b++)
            if (!strcmp(ggml_backend_buft_name(*b), "CPU_REPACK")) return *b;
    return ggml_backend_dev_buffer_type(g_dev);
}

static void ggml_setup(ggml_side *g, int ggml_type, int layers, unsigned char *const blocks[][2]) {
    ggml_backend_buffer_type_t weights_buft = weights_buffer(ggml_type);
    g->backend = g_backend;
    struct ggml_init_params p = {.mem_size = ggml_tensor_overhead() * (3 * MAX_LAYERS + 8) + ggml_graph_overhead(), .no_alloc = true};
    struct ggml_context *wctx = g->wctx = ggml_init(p);
    g->ctx = ggml_init(p);
    struct ggml_tensor *w[MAX_LAYERS][2];
    for (int l = 0; l < layers; l++)
        for (int s = 0; s < 2; s++) w[l][s] = ggml_new_tensor_2d(wctx, (enum ggml_type)ggml_type, shapes[s][1], shapes[s][0]);
    g->x = ggml_new_tensor_2d(g->ctx, GGML_TYPE_F32, 3072, 1);
    struct ggml_tensor *x768 = ggml_view_2d(g->ctx, g->x, 768, 1, g->x->nb[1], 0);
    g->graph = ggml_new_graph(g->ctx);
    for (int l = 0; l < layers; l++) { /* the inputs do not chain: every product reads x, as kiln's below */
        g->y[l][0] = ggml_mul_mat(g->ctx, w[l][0], x768);
        g->y[l][1] = ggml_mul_mat(g->ctx, w[l][1], g->x);
        ggml_build_forward_expand(g->graph, g->y[l][0]);
        ggml_build_forward_expand(g->graph, g->y[l][1]);
    }
    g->buffers[0] = ggml_backend_alloc_ctx_tensors_from_buft(wctx, weights_buft);
    g->buffers[1] = ggml_backend_alloc_ctx_tensors_from_buft(g->ctx, ggml_backend_dev_buffer_type(g_dev));
    if (!g->buffers[0] || !g->buffers[1]) die("ggml could not allocate the tensors");
    g->buffer = ggml_backend_buft_name(weights_buft);
    for (int l = 0; l < layers; l++)
        for (int s = 0; s < 2; s++) ggml_backend_tensor_set(w[l][s], blocks[l][s], 0, ggml_nbytes(w[l][s]));
}

int main(int argc, char **argv) {
    const char *lib_dir = NULL, *formats = "q4_k,q6_k,q5_k,q5_0,q5_1,q8_0,q4_0";
    int layers = 12, passes = 20, rounds = 5;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--ggml")) lib_dir = argv[i + 1];
        else if (!strcmp(argv[i], "--formats")) formats = argv[i + 1];
        else if (!strcmp(argv[i], "--layers")) layers = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--passes")) passes = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--rounds")) rounds = atoi(argv[i + 1]);
        else die("usage: bench_qmatmul [--ggml LIBDIR] [--formats q4_k,...] [--layers N] [--passes N] [--rounds N]");
    }
    if (layers < 1 || layers > MAX_LAYERS || rounds < 1 || rounds > MAX_ROUNDS || passes < 1) die("bad counts");
    static const struct { const char *name; int ggml_type; } ggml_types[] = {
        {"q8_0", GGML_TYPE_Q8_0}, {"q4_0", GGML_TYPE_Q4_0}, {"q4_1", GGML_TYPE_Q4_1}, {"q5_0", GGML_TYPE_Q5_0},
        {"q5_1", GGML_TYPE_Q5_1}, {"q4_k", GGML_TYPE_Q4_K}, {"q5_k", GGML_TYPE_Q5_K}, {"q6_k", GGML_TYPE_Q6_K}};
    if (lib_dir) ggml_open(lib_dir);
    kiln_ctx *ctx;
    if (kiln_open("cpu", &ctx)) die(kiln_error_message());
    printf("%-5s %6s %12s %12s %7s %9s %9s %7s %10s  %s\n", "type", "layers", "kiln GB/s", "ggml GB/s", "ratio", "kiln best",
           "ggml best", "ratio", "max diff", "ggml buffer");
    char list[256];
    snprintf(list, sizeof list, "%s", formats);
    for (char *name = strtok(list, ","); name; name = strtok(NULL, ",")) {
        const int f = kiln_qformat_from_name(name);
        int ggml_type = -1;
        for (size_t t = 0; t < sizeof ggml_types / sizeof ggml_types[0]; t++)
            if (!strcmp(ggml_types[t].name, name)) ggml_type = ggml_types[t].ggml_type;
        if (f < 0 || ggml_type < 0) die("unknown format");
        /* weights: random, quantized once, the same bytes for both */
        unsigned char *blocks[MAX_LAYERS][2];
        kiln_qmatrix *q[MAX_LAYERS][2];
        double bytes = 0;
        uint32_t seed = 7;
        for (int l = 0; l < layers; l++)
            for (int s = 0; s < 2; s++) {
                const int64_t n = shapes[s][0], k = shapes[s][1];
                const size_t row = kiln_qformat_row_bytes((kiln_qformat)f, k);
                float *w = malloc((size_t)k * sizeof *w);
                blocks[l][s] = malloc(row * (size_t)n);
                for (int64_t r = 0; r < n; r++) {
                    for (int64_t j = 0; j < k; j++) w[j] = 0.04f * frand(&seed);
                    if (kiln_quantize_row((kiln_qformat)f, w, k, blocks[l][s] + (size_t)r * row)) die(kiln_error_message());
                }
                free(w);
                q[l][s] = kiln_qmatrix_new(ctx, (kiln_qformat)f, n, k);
                if (!q[l][s] || kiln_qmatrix_upload(q[l][s], blocks[l][s])) die(kiln_error_message());
                bytes += (double)(row * (size_t)n);
            }
        float xs[3072];
        for (int j = 0; j < 3072; j++) xs[j] = frand(&seed);
        kiln_tensor *x3072 = kiln_tensor_new(ctx, KILN_F32, 2, (int64_t[]){1, 3072});
        kiln_tensor *x768 = kiln_tensor_new(ctx, KILN_F32, 2, (int64_t[]){1, 768});
        kiln_upload_f32(x3072, xs, 3072), kiln_upload_f32(x768, xs, 768);
        ggml_side g = {0};
        if (lib_dir) {
            ggml_setup(&g, ggml_type, layers, blocks);
            ggml_backend_tensor_set(g.x, xs, 0, sizeof xs);
        }
        double tk[MAX_ROUNDS], tg[MAX_ROUNDS], diff = 0;
        for (int r = 0; r < rounds; r++) {
            double t0 = now();
            for (int p = 0; p < passes; p++) {
                for (int l = 0; l < layers; l++)
                    kiln_matmul_q(x768, q[l][0], NULL), kiln_matmul_q(x3072, q[l][1], NULL);
                kiln_sync(ctx);
                if (p + 1 < passes || r + 1 < rounds || !lib_dir) kiln_step_reset(ctx);
            }
            tk[r] = now() - t0;
            if (!lib_dir) continue;
            t0 = now();
            for (int p = 0; p < passes; p++) ggml_backend_graph_compute(g.backend, g.graph);
            tg[r] = now() - t0;
        }
        if (lib_dir) { /* the last pass's outputs, side by side */
            for (int l = 0; l < layers; l++)
                for (int s = 0; s < 2; s++) {
                    const int64_t n = shapes[s][0];
                    float *a = malloc((size_t)n * sizeof *a), *b = malloc((size_t)n * sizeof *b), amax = 0;
                    kiln_download_f32(kiln_matmul_q(s ? x3072 : x768, q[l][s], NULL), a, n);
                    ggml_backend_tensor_get(g.y[l][s], b, 0, (size_t)n * sizeof *b);
                    for (int64_t i = 0; i < n; i++) amax = fmaxf(amax, fabsf(b[i]));
                    for (int64_t i = 0; i < n; i++) diff = fmax(diff, fabs((double)a[i] - b[i]) / amax);
                    free(a), free(b);
                }
            kiln_step_reset(ctx);
        }
        qsort(tk, (size_t)rounds, sizeof tk[0], cmp_double);
        qsort(tg, (size_t)rounds, sizeof tg[0], cmp_double);
        const double gk = bytes * passes / tk[rounds / 2] / 1e9, gg = lib_dir ? bytes * passes / tg[rounds / 2] / 1e9 : 0;
        const double bk = bytes * passes / tk[0] / 1e9, bg = lib_dir ? bytes * passes / tg[0] / 1e9 : 0;
        printf("%-5s %6d %12.2f %12.2f %7.3f %9.2f %9.2f %7.3f %10.2e  %s\n", name, layers, gk, gg, lib_dir ? gk / gg : 0.0,
               bk, bg, lib_dir ? bk / bg : 0.0, diff, lib_dir ? g.buffer : "-");
        fflush(stdout);
        for (int l = 0; l < layers; l++)
            for (int s = 0; s < 2; s++) kiln_qmatrix_free(q[l][s]), free(blocks[l][s]);
        kiln_tensor_free(x3072), kiln_tensor_free(x768);
        if (lib_dir) {
            ggml_backend_buffer_free(g.buffers[0]), ggml_backend_buffer_free(g.buffers[1]);
            ggml_free(g.wctx), ggml_free(g.ctx);
        }
    }
    kiln_close(ctx);
    return 0;
}
