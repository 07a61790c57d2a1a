/* The per-device GEMM tuning table.
 *
 * Each entry names the kernel variant used for products too large for gemm_direct, and the
 * block sizes compiled into cl/gemm.cl. Entries are matched in order: the first whose class
 * (CPU / GPU) matches and whose `match` is a substring of the device name wins, so specific
 * devices go first and a class default last. Add a device by measuring with
 *     KILN_CL_GEMM_MR=.. KILN_CL_GEMM_NR=.. kiln bench gemm --backend opencl
 * and recording the winner here with a note of how it was measured. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opencl/cl_gemm.h"

/* Every entry fills both blocks: each class runs its own variant, but KILN_CL_GEMM (the
 * tests) can force the other one on any device. */
static const cl_gemm_tuning g_table[] = {
    /* PoCL on AVX-512 (32 vector registers): a 12 x 32 block is 24 zmm accumulators, two B
     * vectors and a broadcast. Measured on the 2-core Xeon (Skylake-AVX512) CI machine,
     * PoCL 3.1, see docs/benchmarks.md "GEMM, OpenCL". */
    {.match = "avx512", .gpu = 0, .variant = "cpu",
     .mr = 12, .nr = 32, .vw = 16,
     .tm = 64, .tn = 64, .kt = 16, .wm = 4, .wn = 4,
     .measured = "measured: PoCL 3.1, Xeon skylake-avx512"},
    /* other CPU devices (AVX2: 16 registers): a 6 x 16 block of 8-wide vectors, 12
     * accumulators. Not measured here (no such device): the BLIS haswell shape. */
    {.match = NULL, .gpu = 0, .variant = "cpu",
     .mr = 6, .nr = 16, .vw = 8,
     .tm = 64, .tn = 64, .kt = 16, .wm = 4, .wn = 4,
     .measured = "not measured: BLIS haswell micro-kernel shape"},
    /* GPUs: 64 x 64 tiles, 16 x 16 work-items of 4 x 4 outputs, 16-deep slices (8 KiB of
     * local memory). Not measured: no GPU was available when this was written. */
    {.match = NULL, .gpu = 1, .variant = "tiled",
     .mr = 6, .nr = 16, .vw = 8,
     .tm = 64, .tn = 64, .kt = 16, .wm = 4, .wn = 4,
     .measured = "not measured: common GPU starting point"},
};

/* A smaller tile for GPUs that cannot run 256 work-items or 8 KiB of local memory. */
static const cl_gemm_tuning g_small_gpu = {
    .match = NULL, .gpu = 1, .variant = "tiled",
    .mr = 6, .nr = 16, .vw = 8,
    .tm = 32, .tn = 32, .kt = 16, .wm = 4, .wn = 4,
    .measured = "fallback for small work-groups"};

static int fits(const cl_dev *d, const cl_gemm_tuning *t) {
    size_t threads = (size_t)(t->tm / t->wm) * (size_t)(t->tn / t->wn);
    size_t local = (size_t)t->kt * (size_t)(t->tm + t->tn) * sizeof(float);
    return threads <= d->max_wg && local <= d->local_mem;
}

const cl_gemm_tuning *cl_gemm_tuning_for(const cl_dev *d) {
    int gpu = !d->is_cpu || d->is_gpu;
    for (size_t i = 0; i < sizeof g_table / sizeof g_table[0]; i++) {
        const cl_gemm_tuning *t = &g_table[i];
        if (t->gpu != gpu) continue;
        if (t->match && !strstr(d->name, t->match)) continue;
        if (!fits(d, t)) continue;
        return t;
    }
    return &g_small_gpu;
}

/* KILN_CL_GEMM_<NAME>=value overrides one size, for tuning sweeps. */
static int env_int(const char *name, int fallback) {
    const char *v = getenv(name);
    return v && *v ? atoi(v) : fallback;
}

void cl_gemm_configure(cl_dev *d) {
    const cl_gemm_tuning *t = cl_gemm_tuning_for(d);
    cl_gemm_config *g = &d->gemm;
    snprintf(g->variant, sizeof g->variant, "%s", t->variant);
    g->mr = env_int("KILN_CL_GEMM_MR", t->mr);
    g->nr = env_int("KILN_CL_GEMM_NR", t->nr);
    g->vw = env_int("KILN_CL_GEMM_VW", t->vw);
    g->tm = env_int("KILN_CL_GEMM_TM", t->tm);
    g->tn = env_int("KILN_CL_GEMM_TN", t->tn);
    g->kt = env_int("KILN_CL_GEMM_KT", t->kt);
    g->wm = env_int("KILN_CL_GEMM_WM", t->wm);
    g->wn = env_int("KILN_CL_GEMM_WN", t->wn);
    g->rx = g->tn / g->wn;
    g->ry = g->tm / g->wm;
    snprintf(g->defines, sizeof g->defines,
             "#define GEMM_MR %d\n#define GEMM_NR %d\n#define GEMM_VW %d\n"
             "#define GEMM_TM %d\n#define GEMM_TN %d\n#define GEMM_KT %d\n"
             "#define GEMM_WM %d\n#define GEMM_WN %d\n#define GEMM_RX %d\n#define GEMM_RY %d\n",
             g->mr, g->nr, g->vw, g->tm, g->tn, g->kt, g->wm, g->wn, g->rx, g->ry);
}
