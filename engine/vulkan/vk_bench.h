/* Measurements of the Vulkan device itself, for benchmarks and their tests (not part of
 * the kernel table). */
#ifndef KILN_VK_BENCH_H
#define KILN_VK_BENCH_H

#include "core/internal.h"

/* Runs fma_peak.comp on a Vulkan context: `invocations` invocations of `iters` x 288 FMAs.
 * Returns the best of `repeat` runs in GFLOP/s of wall time (and of process CPU time, which
 * is what a CPU device such as lavapipe consumes), and the invocations' results in `out`
 * (NULL: not returned) so that a test can check them. */
kiln_status kiln_vulkan_fma_peak(kiln_ctx *ctx, uint32_t invocations, uint32_t iters, int repeat,
                                 double *gflops_wall, double *gflops_cpu, float *out);

#endif
