/* Device measurement on OpenCL (kiln/probe.h, the probe slots of backend.h): timers from
 * profiling events, the driver string, and the host side of cl/probe.cl.
 *
 * A timer is two markers on kiln's in-order queue: the begin marker completes when the work
 * before it has, the end marker when the timed work has; the device time is the span
 * between their completion timestamps. That needs a queue with CL_QUEUE_PROFILING_ENABLE,
 * which kiln always creates (cl_device.c): the cost when no event is asked for is a clock
 * read per command (PoCL here: no difference measurable on 64k-item kernels, at most
 * ~0.1 us of host CPU time on empty ones), and a queue's properties cannot change later. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opencl/cl_internal.h"
#include "opencl/cl_probe.h"

typedef struct cl_timer {
    cl_event begin;
} cl_timer;

static kiln_status marker(cl_dev *d, cl_event *out) {
    cl_int err = clEnqueueMarkerWithWaitList(d->queue, 0, NULL, out);
    return err == CL_SUCCESS ? KILN_OK : cl_fail(err, "clEnqueueMarkerWithWaitList (timer)");
}

kiln_status cl_timer_begin(void *dev, void **timer) {
    cl_dev *d = dev;
    cl_command_queue_properties props = 0;
    clGetCommandQueueInfo(d->queue, CL_QUEUE_PROPERTIES, sizeof props, &props, NULL);
    if (!(props & CL_QUEUE_PROFILING_ENABLE))
        return kiln_set_error(KILN_ERR_UNSUPPORTED, "opencl: the queue of %s has no profiling, so kiln cannot time work on it",
                              d->name);
    cl_timer *t = calloc(1, sizeof *t);
    if (!t) return kiln_set_error(KILN_ERR_MEMORY, "out of host memory");
    kiln_status s = marker(d, &t->begin);
    if (s) {
        free(t);
        return s;
    }
    *timer = t;
    return KILN_OK;
}

static kiln_status completed_at(cl_event ev, cl_ulong *ns) {
    cl_int err = clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof *ns, ns, NULL);
    return err == CL_SUCCESS ? KILN_OK : cl_fail(err, "clGetEventProfilingInfo (timer)");
}

kiln_status cl_timer_end(void *dev, void *timer, double *device_s) {
    cl_dev *d = dev;
    cl_timer *t = timer;
    cl_event end = NULL;
    kiln_status s = marker(d, &end);
    cl_int err = s ? CL_SUCCESS : clWaitForEvents(1, &end);
    if (!s && err != CL_SUCCESS) s = cl_fail(err, "waiting for the timed work");
    cl_ulong t0 = 0, t1 = 0;
    if (!s) s = completed_at(t->begin, &t0);
    if (!s) s = completed_at(end, &t1);
    if (end) clReleaseEvent(end);
    clReleaseEvent(t->begin);
    free(t);
    if (s) return s;
    *device_s = t1 > t0 ? (double)(t1 - t0) * 1e-9 : 0.0;
    return KILN_OK;
}

void cl_driver_info(void *dev, char *buf, size_t size) {
    cl_dev *d = dev;
    char plat[128] = "", pver[128] = "", drv[128] = "";
    clGetPlatformInfo(d->platform, CL_PLATFORM_NAME, sizeof plat, plat, NULL);
    clGetPlatformInfo(d->platform, CL_PLATFORM_VERSION, sizeof pver, pver, NULL);
    clGetDeviceInfo(d->device, CL_DRIVER_VERSION, sizeof drv, drv, NULL);
    plat[sizeof plat - 1] = pver[sizeof pver - 1] = drv[sizeof drv - 1] = 0;
    snprintf(buf, size, "%s, %s; driver %s", plat, pver, drv);
}

/* ---- the FMA ceiling: FMA_CHAINS_<width> of cl/probe.cl ---- */

/* The chains per work-item of the kernel for `width` lanes, 0 for a width OpenCL C lacks.
 * The kernels' KILN_CPU_DEVICE is d->is_cpu && !d->is_gpu (cl_device.c). */
static int fma_chains(const cl_dev *d, int width) {
    int cpu = d->is_cpu && !d->is_gpu;
    switch (width) {
    case 1: return cpu ? KILN_ABI_CL_FMA_CHAINS_CPU : KILN_ABI_CL_FMA_CHAINS_GPU_X1;
    case 2: return cpu ? KILN_ABI_CL_FMA_CHAINS_CPU : KILN_ABI_CL_FMA_CHAINS_GPU_X2;
    case 4: return cpu ? KILN_ABI_CL_FMA_CHAINS_CPU : KILN_ABI_CL_FMA_CHAINS_GPU_X4;
    case 8: return cpu ? KILN_ABI_CL_FMA_CHAINS_CPU : KILN_ABI_CL_FMA_CHAINS_GPU_X8;
    case 16: return cpu ? KILN_ABI_CL_FMA_CHAINS_CPU : KILN_ABI_CL_FMA_CHAINS_GPU_X16;
    }
    return 0;
}

kiln_status cl_probe_fma(void *dev, kiln_probe_fma_args *a) {
    cl_dev *d = dev;
    int chains = fma_chains(d, a->width);
    if (!chains)
        return kiln_set_error(KILN_ERR_UNSUPPORTED, "opencl: no %d-lane vectors in OpenCL C (2 to 16 lanes)", a->width);
    if (a->dtype == KILN_F16 && !d->has_fp16)
        return kiln_set_error(KILN_ERR_UNSUPPORTED, "opencl: %s has no f16 arithmetic (cl_khr_fp16)", d->name);
    if (a->dtype != KILN_F32 && a->dtype != KILN_F16)
        return kiln_set_error(KILN_ERR_ARGUMENT, "opencl: FMA probe of %s", kiln_dtype_name(a->dtype));
    if (a->iters < 0 || a->iters > UINT32_MAX)
        return kiln_set_error(KILN_ERR_ARGUMENT, "opencl: %lld FMA rounds exceed 2^32", (long long)a->iters);
    /* a GPU needs many work-items in flight per compute unit; a CPU device enough
     * work-groups for its cores */
    if (a->items <= 0) a->items = d->is_gpu ? (int64_t)1 << 20 : (int64_t)1 << 14;
    if (a->items > UINT32_MAX) return kiln_set_error(KILN_ERR_ARGUMENT, "opencl: %lld FMA items", (long long)a->items);
    a->chains = chains;
    char name[16];
    snprintf(name, sizeof name, "fma_%sx%d", kiln_dtype_name(a->dtype), a->width);
    kiln_ref out = a->out;
    kiln_buf *scratch = NULL;
    if (!cl_has(out)) {
        kiln_status s = cl_temp(d, (size_t)a->items * 4, &scratch);
        if (s) return s;
        out.buf = scratch;
        out.off = 0;
    }
    cl_call c = cl_begin(d, "probe", name);
    cl_arg_ref(&c, out, 4);
    cl_arg_u32(&c, (uint32_t)a->items);
    cl_arg_u32(&c, (uint32_t)a->iters);
    cl_arg_f32(&c, a->mul);
    cl_arg_f32(&c, a->add);
    size_t global = (size_t)a->items, local = d->max_wg < 64 ? d->max_wg : 64;
    kiln_status s = cl_run(&c, 1, &global, &local);
    if (scratch) cl_free(d, scratch); /* later users of its bytes queue after this kernel */
    return s;
}

/* ---- memory copy ---- */

kiln_status cl_probe_copy(void *dev, const kiln_probe_copy_args *a) {
    cl_dev *d = dev;
    if (a->bytes % 16 || (a->src.buf->off + a->src.off) % 16 || (a->dst.buf->off + a->dst.off) % 16)
        return kiln_set_error(KILN_ERR_ARGUMENT, "opencl: copy probe of %zu bytes: sizes and offsets must be multiples of 16",
                              a->bytes);
    cl_call c = cl_begin(d, "probe", "copy_u4");
    cl_arg_ref(&c, a->src, 16);
    cl_arg_ref(&c, a->dst, 16);
    cl_arg_u64(&c, a->bytes / 16);
    return cl_run_1d(&c, a->bytes / 16);
}

/* ---- dispatch latency ---- */

kiln_status cl_probe_dispatch(void *dev, const kiln_probe_dispatch_args *a) {
    cl_dev *d = dev;
    for (int i = 0; i < a->count; i++) {
        cl_call c = cl_begin(d, "probe", "dispatch_tick");
        cl_arg_ref(&c, a->counter, 4);
        size_t one = 1;
        kiln_status s = cl_run(&c, 1, &one, &one);
        if (s) return s;
    }
    return KILN_OK;
}
