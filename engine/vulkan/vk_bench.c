/* The FMA-throughput measurement (see vk_bench.h and shaders/fma_peak.comp). */
#include <string.h>

#include "push.h"
#include "vk_bench.h"
#include "vk_internal.h"

typedef struct { FMA_PEAK_PUSH } fma_peak_push;

kiln_status kiln_vulkan_fma_peak(kiln_ctx *ctx, uint32_t invocations, uint32_t iters, int repeat,
                                 double *gflops_wall, double *gflops_cpu, float *out) {
    if (!ctx || strcmp(ctx->be->name, "vulkan") != 0)
        return kiln_set_error(KILN_ERR_ARGUMENT, "kiln_vulkan_fma_peak: not a Vulkan context");
    vk_dev *d = vk_of(ctx->dev);
    kiln_ref buf;
    kiln_status s = vk_scratch(d, (size_t)invocations * 4, &buf);
    if (s) return s;
    uint32_t wg = 64;
    while (wg > d->caps.max_wg_invocations) wg /= 2;
    double best_wall = 1e30, best_cpu = 1e30;
    for (int r = 0; r <= repeat && !s; r++) { /* run 0 warms up (the driver compiles) */
        fma_peak_push p = {.iters = iters, .n = invocations};
        vk_launch l = {
            .shader = VK_SHADER_fma_peak, .n_ops = VK_OPS(p), .push = &p, .push_bytes = sizeof p, .n_spec = 1};
        l.spec[0] = wg;
        l.ops[0] = vk_out(buf, invocations, 4);
        vk_grid_1d(d, (invocations + wg - 1) / wg, l.groups);
        if ((s = vk_flush(d, 1))) break;
        double w0 = kiln_clock_wall(), c0 = kiln_clock_cpu();
        s = vk_dispatch(d, &l);
        if (!s) s = vk_flush(d, 1);
        double w = kiln_clock_wall() - w0, c = kiln_clock_cpu() - c0;
        if (r > 0 && w < best_wall) best_wall = w;
        if (r > 0 && c < best_cpu) best_cpu = c;
    }
    if (!s && out) s = vk_download(d, buf, out, (size_t)invocations * 4);
    vk_buf_release(d, buf.buf);
    if (s) return s;
    double flops =
        2.0 * KILN_ABI_VK_FMA_PEAK_CHAINS * KILN_ABI_VK_FMA_PEAK_ROUNDS * (double)iters * (double)invocations;
    if (gflops_wall) *gflops_wall = flops / best_wall * 1e-9;
    /* a GPU does not run on the host's CPU: its CPU time is only the waiting */
    if (gflops_cpu) *gflops_cpu = d->dclass == VK_CLASS_CPU && best_cpu > 0 ? flops / best_cpu * 1e-9 : 0.0;
    return KILN_OK;
}
