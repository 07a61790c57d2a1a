/* Device measurement on Vulkan (kiln/probe.h, the probe slots of backend.h): timestamp
 * timers, the driver string, and the host side of shaders/probe_*.comp.
 *
 * A timer is a query pool of two timestamps of its own: begin waits for earlier work (so
 * none of it overlaps the interval), then records a reset and a top-of-pipe timestamp at
 * the head of a fresh batch; end records a bottom-of-pipe timestamp after the timed work,
 * waits, and reads both. Timestamps from different submissions to one queue share a
 * timebase, so batches submitted in between (a download, a full batch) are fine. This is
 * separate from KILN_VK_PROFILE (vk_profile.c), which brackets every dispatch: a timer
 * measures a whole sequence, whatever it contains, at the cost of two timestamps. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probe_push.h"
#include "vk_internal.h"
#include "vk_probe.h"

typedef struct { PROBE_FMA_PUSH } probe_fma_push;
typedef struct { PROBE_COPY_PUSH } probe_copy_push;
typedef struct { PROBE_DISPATCH_PUSH } probe_dispatch_push;

typedef struct vk_timer {
    VkQueryPool pool;
} vk_timer;

static void timer_free(vk_dev *d, vk_timer *t) {
    if (t->pool && d->device) vkDestroyQueryPool(d->device, t->pool, NULL);
    free(t);
}

kiln_status vk_timer_begin(void *dev, void **timer) {
    vk_dev *d = vk_of(dev);
    kiln_status s = vk_health(d);
    if (s) return s;
    if (!d->caps.timestamp_bits)
        return kiln_set_error(KILN_ERR_UNSUPPORTED, "vulkan: %s has no timestamps on its compute queue, so kiln cannot "
                                                    "time work on it",
                              d->name);
    if ((s = vk_flush(d, 1))) return s;
    vk_timer *t = calloc(1, sizeof *t);
    if (!t) return kiln_set_error(KILN_ERR_MEMORY, "out of host memory");
    VkQueryPoolCreateInfo qci = {.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
    qci.queryType = VK_QUERY_TYPE_TIMESTAMP;
    qci.queryCount = 2;
    VkResult r = vkCreateQueryPool(d->device, &qci, NULL, &t->pool);
    if (r != VK_SUCCESS) {
        free(t);
        return vk_result(r, "vulkan: vkCreateQueryPool (timer)");
    }
    VkCommandBuffer cmd;
    if ((s = vk_cmd(d, &cmd))) {
        timer_free(d, t);
        return s;
    }
    vkCmdResetQueryPool(cmd, t->pool, 0, 2);
    vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, t->pool, 0);
    *timer = t;
    return KILN_OK;
}

kiln_status vk_timer_end(void *dev, void *timer, double *device_s) {
    vk_dev *d = vk_of(dev);
    vk_timer *t = timer;
    VkCommandBuffer cmd;
    kiln_status s = vk_cmd(d, &cmd);
    if (s) {
        /* the begin timestamp may sit in a recorded batch: submit it before the pool goes */
        if (d->device && !d->lost) vk_flush(d, 1);
        timer_free(d, t);
        return s;
    }
    vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, t->pool, 1);
    s = vk_flush(d, 1);
    uint64_t ts[2] = {0, 0};
    if (!s) {
        VkResult r = vkGetQueryPoolResults(d->device, t->pool, 0, 2, sizeof ts, ts, sizeof ts[0],
                                           VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT);
        if (r != VK_SUCCESS) s = vk_result(r, "vulkan: reading the timer's timestamps");
    }
    if (s && d->device) vkDeviceWaitIdle(d->device); /* nothing may still use the pool */
    timer_free(d, t);
    if (s) return s;
    uint64_t mask = d->caps.timestamp_bits >= 64 ? ~0ull : ((1ull << d->caps.timestamp_bits) - 1);
    uint64_t ticks = ((ts[1] & mask) - (ts[0] & mask)) & mask;
    *device_s = (double)ticks * d->caps.timestamp_period * 1e-9;
    return vk_health(d);
}

void vk_driver_info(void *dev, char *buf, size_t size) {
    const vk_physical *p = &vk_of(dev)->phys;
    uint32_t api = p->props.apiVersion;
    char vk[32];
    snprintf(vk, sizeof vk, "Vulkan %u.%u.%u", VK_API_VERSION_MAJOR(api), VK_API_VERSION_MINOR(api),
             VK_API_VERSION_PATCH(api));
    if (p->driver_name[0])
        snprintf(buf, size, "%s, %s; %s", p->driver_name, p->driver_info[0] ? p->driver_info : "no driver info", vk);
    else /* no VkPhysicalDeviceDriverProperties: the raw vendor-encoded version */
        snprintf(buf, size, "driver version 0x%08x (vendor 0x%04x); %s", p->props.driverVersion, p->props.vendorID, vk);
}

/* ---- the FMA ceiling ---- */

kiln_status vk_probe_fma(void *dev, kiln_probe_fma_args *a) {
    vk_dev *d = vk_of(dev);
    kiln_status s = vk_health(d);
    if (s) return s;
    if (a->width != 1 && a->width != 2 && a->width != 4)
        return kiln_set_error(KILN_ERR_UNSUPPORTED, "vulkan: no %d-lane vectors in GLSL (1, 2 and 4: float, vec2, vec4)",
                              a->width);
    if (a->dtype == KILN_F16 && !d->caps.float16)
        return kiln_set_error(KILN_ERR_UNSUPPORTED, "vulkan: %s has no f16 arithmetic (shaderFloat16)", d->name);
    if (a->dtype != KILN_F32 && a->dtype != KILN_F16)
        return kiln_set_error(KILN_ERR_ARGUMENT, "vulkan: FMA probe of %s", kiln_dtype_name(a->dtype));
    if (a->iters < 0 || a->iters > UINT32_MAX)
        return kiln_set_error(KILN_ERR_ARGUMENT, "vulkan: %lld FMA rounds exceed 2^32", (long long)a->iters);
    /* A GPU needs many invocations in flight per core to hide latency; a CPU device (lavapipe)
     * only enough workgroups for its threads. */
    if (a->items <= 0) a->items = d->dclass == VK_CLASS_CPU ? (int64_t)1 << 14 : (int64_t)1 << 20;
    if (a->items > UINT32_MAX) return kiln_set_error(KILN_ERR_ARGUMENT, "vulkan: %lld FMA items", (long long)a->items);
    a->chains = KILN_ABI_VK_PROBE_FMA_ACCUMULATORS / a->width; /* shaders/probe_fma.comp */
    kiln_ref out = a->out;
    if (!vk_has(out) && (s = vk_scratch(d, (size_t)a->items * 4, &out))) return s;
    /* the builds of probe_fma.comp (shaders/variants.txt) by [f16][width 1, 2, 4] */
    static const vk_shader_id builds[2][3] = {
        {VK_SHADER_probe_fma, VK_SHADER_probe_fma_f32x2, VK_SHADER_probe_fma_f32x4},
        {VK_SHADER_probe_fma_f16x1, VK_SHADER_probe_fma_f16x2, VK_SHADER_probe_fma_f16x4},
    };
    probe_fma_push p = {.items = (uint32_t)a->items, .iters = (uint32_t)a->iters, .mul = a->mul, .add = a->add};
    vk_launch l = {.shader = builds[a->dtype == KILN_F16][a->width / 2],
                   .n_ops = VK_OPS(p),
                   .push = &p,
                   .push_bytes = sizeof p,
                   .n_spec = 1};
    uint32_t wg = 64;
    while (wg > d->caps.max_wg_invocations) wg /= 2;
    l.spec[0] = wg;
    l.ops[0] = vk_out(out, a->items, 4);
    vk_grid_1d(d, vk_div_up((uint64_t)a->items, wg), l.groups);
    s = vk_dispatch(d, &l);
    if (!vk_has(a->out)) vk_buf_release(d, out.buf);
    return s;
}

/* ---- memory copy: one dispatch (a buffer is never larger than one storage-buffer binding
 * covers: vk_memory.c) ---- */

kiln_status vk_probe_copy(void *dev, const kiln_probe_copy_args *a) {
    vk_dev *d = vk_of(dev);
    if (a->bytes % 16 || a->src.off % 16 || a->dst.off % 16)
        return kiln_set_error(KILN_ERR_ARGUMENT, "vulkan: copy probe of %zu bytes: sizes and offsets must be multiples of 16",
                              a->bytes);
    uint32_t wg = 256;
    while (wg > d->caps.max_wg_invocations) wg /= 2;
    /* buffers beyond one binding are copied in pieces that fit, one dispatch each */
    size_t piece = (size_t)(d->max_operand_bytes / 16 * 16);
    kiln_status s = KILN_OK;
    for (size_t at = 0; !s && at < a->bytes; at += piece) {
        size_t bytes = a->bytes - at < piece ? a->bytes - at : piece;
        probe_copy_push p = {.n = (uint32_t)(bytes / 16)};
        vk_launch l = {
            .shader = VK_SHADER_probe_copy, .n_ops = VK_OPS(p), .push = &p, .push_bytes = sizeof p, .n_spec = 1};
        l.spec[0] = wg;
        l.ops[0] = vk_in(vk_ref_at(a->src, (int64_t)at), (int64_t)(bytes / 16), 16);
        l.ops[1] = vk_out(vk_ref_at(a->dst, (int64_t)at), (int64_t)(bytes / 16), 16);
        vk_grid_1d(d, vk_div_up(bytes / 16, wg), l.groups);
        s = vk_dispatch(d, &l);
    }
    return s;
}

/* ---- dispatch latency ---- */

kiln_status vk_probe_dispatch(void *dev, const kiln_probe_dispatch_args *a) {
    vk_dev *d = vk_of(dev);
    for (int i = 0; i < a->count; i++) {
        probe_dispatch_push p = {.off = {0}};
        vk_launch l = {.shader = VK_SHADER_probe_dispatch, .n_ops = VK_OPS(p), .push = &p, .push_bytes = sizeof p};
        l.ops[0] = vk_out(a->counter, 1, 4);
        l.ops[0].write = 1;
        l.groups[0] = l.groups[1] = l.groups[2] = 1;
        kiln_status s = vk_dispatch(d, &l);
        if (s) return s;
    }
    return KILN_OK;
}
