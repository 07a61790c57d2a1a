/* The FMA-throughput kernel (shaders/fma_peak.comp) that measures a Vulkan device's own
 * arithmetic ceiling, the yardstick for the GEMM in docs/benchmarks.md.
 *
 * As a test it checks that the kernel computes exactly the FMA chains it claims to (else
 * its GFLOP/s would mean nothing). `test_vulkan_peak --report [N]` also prints the ceiling
 * and, measured in the same run, kiln's N x N x N GEMM (default 1024) as a fraction of it:
 * wall-clock GFLOP/s, and GFLOP per second of process CPU time, which on a CPU device such
 * as lavapipe does not depend on what else the machine is running. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#ifdef KILN_HAVE_VULKAN
#include "core/internal.h" /* kiln_clock_wall, kiln_clock_cpu */
#include "vulkan/vk_bench.h"

START_TEST(fma_peak_computes_its_chains) {
    kiln_ctx *ctx;
    ck_assert_msg(kiln_open("vulkan", &ctx) == KILN_OK, "%s", kiln_error_message());
    enum { N = 200, ITERS = 7 };
    float out[N];
    double wall, cpu;
    ck_assert_msg(kiln_vulkan_fma_peak(ctx, N, ITERS, 1, &wall, &cpu, out) == KILN_OK, "%s", kiln_error_message());
    /* the workgroup size is 64 or less (a power of two): the local id repeats with it */
    for (int wg = 64; wg >= 1; wg /= 2) {
        int ok = 1;
        for (int id = 0; id < N && ok; id++) {
            float x = (float)(id % wg) * 1e-3f, m = 0.999f + x * 1e-6f, c = 1e-3f, a[12];
            for (int j = 0; j < 12; j++) a[j] = x + (float)j;
            for (int i = 0; i < ITERS * 24; i++) /* 24 rounds per iteration of the shader loop */
                for (int j = 0; j < 12; j++) a[j] = fmaf(a[j], m, c);
            float s = ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7])) + ((a[8] + a[9]) + (a[10] + a[11]));
            ok = fabsf(out[id] - s) <= 1e-5f * fabsf(s);
        }
        if (ok) {
            ck_assert(wall > 0);
            kiln_close(ctx);
            return;
        }
    }
    ck_abort_msg("fma_peak results differ from the FMA chains: out[1] = %.8g", out[1]);
}
END_TEST

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Prints the ceiling and the GEMM; returns 0 on success. */
static int report(int n) {
    kiln_ctx *ctx;
    if (kiln_open("vulkan", &ctx) != KILN_OK) {
        fprintf(stderr, "%s\n", kiln_error_message());
        return 1;
    }
    double peak_wall, peak_cpu;
    if (kiln_vulkan_fma_peak(ctx, 1 << 16, 700, 5, &peak_wall, &peak_cpu, NULL)) {
        fprintf(stderr, "%s\n", kiln_error_message());
        return 1;
    }
    kiln_tensor *a = kiln_tensor_2d(ctx, KILN_F32, n, n), *b = kiln_tensor_2d(ctx, KILN_F32, n, n);
    if (!a || !b || kiln_init_uniform(a, 1, 1, -1, 1) || kiln_init_uniform(b, 1, 2, -1, 1)) {
        fprintf(stderr, "%s\n", kiln_error_message());
        return 1;
    }
    enum { RUNS = 7 };
    double walls[RUNS], cpus[RUNS];
    for (int r = -2; r < RUNS; r++) { /* two warm-up runs */
        double w0 = kiln_clock_wall(), c0 = kiln_clock_cpu();
        kiln_tensor *c = kiln_matmul(a, b, NULL, 0, 0);
        if (!c || kiln_sync(ctx)) {
            fprintf(stderr, "%s\n", kiln_error_message());
            return 1;
        }
        if (r >= 0) walls[r] = kiln_clock_wall() - w0, cpus[r] = kiln_clock_cpu() - c0;
        kiln_step_reset(ctx);
    }
    qsort(walls, RUNS, sizeof *walls, cmp_double);
    qsort(cpus, RUNS, sizeof *cpus, cmp_double);
    double flops = 2.0 * n * n * n;
    double g_wall = flops / walls[RUNS / 2] * 1e-9, g_cpu = flops / cpus[RUNS / 2] * 1e-9;
    printf("device          %s\n", kiln_device_name(ctx));
    printf("fma ceiling     %.1f GFLOP/s wall, %.1f GFLOP per CPU-second\n", peak_wall, peak_cpu);
    printf("gemm %dx%dx%d  %.1f GFLOP/s wall (%.0f%% of the ceiling), %.1f GFLOP per CPU-second (%.0f%%)\n", n, n, n,
           g_wall, 100.0 * g_wall / peak_wall, g_cpu, peak_cpu > 0 ? 100.0 * g_cpu / peak_cpu : 0.0);
    kiln_tensor_free(a);
    kiln_tensor_free(b);
    kiln_close(ctx);
    return 0;
}

static void add_tests(TCase *tc) { tcase_add_test(tc, fma_peak_computes_its_chains); }

int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "--report")) return report(argc > 2 ? atoi(argv[2]) : 1024);
    int skip = kt_require_backend("vulkan");
    return skip ? skip : kt_run_tests("vulkan_peak", "vulkan", add_tests);
}

#else
int main(void) { return 77; } /* built without Vulkan */
#endif
