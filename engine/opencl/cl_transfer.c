/* Host <-> device transfers, fills and copies, and synchronization (the only waits).
 *
 * upload() must not block (a training step uploads a batch of tokens between kernels), yet
 * the caller may free its memory as soon as it returns. So the data is copied to host
 * memory we own, written by a non-blocking clEnqueueWriteBuffer into the staging buffer
 * (one cl_mem, always from offset 0), and moved into place by a copy kernel; the host copy
 * is freed once its write has completed (checked on later transfers and at sync). The
 * in-order queue makes reusing the staging buffer safe: the next write runs after the
 * previous copy. Why a kernel and not a direct write into the block: cl/memory.cl.
 *
 * download() blocks. On host-unified devices (CPU devices, integrated GPUs) the blocks live
 * in host-allocated memory (CL_MEM_ALLOC_HOST_PTR) and are mapped rather than copied. */
#include <stdlib.h>
#include <string.h>

#include "opencl/cl_internal.h"

/* Uploads go through the staging buffer in pieces of at most this many bytes. */
#define CL_UPLOAD_CHUNK ((size_t)16 << 20)
/* Host copies beyond this many bytes pending make upload wait for the oldest ones: a loop
 * of uploads without a sync must not grow host memory without bound. */
#define CL_PENDING_MAX_BYTES ((size_t)256 << 20)

void cl_reap_staging(cl_dev *d, int wait) {
    int kept = 0;
    for (int i = 0; i < d->n_pending; i++) {
        cl_pending *p = &d->pending[i];
        cl_int status = CL_COMPLETE;
        if (wait)
            clWaitForEvents(1, &p->event);
        else
            clGetEventInfo(p->event, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, NULL);
        /* a negative status is a failed write: its copy is no longer needed either */
        if (status <= CL_COMPLETE) {
            clReleaseEvent(p->event);
            free(p->data);
            d->pending_bytes -= p->bytes;
        } else {
            d->pending[kept++] = *p;
        }
    }
    d->n_pending = kept;
}

/* The staging buffer, grown to at least `bytes`. */
static kiln_status staging(cl_dev *d, size_t bytes, cl_mem *out) {
    if (d->staging_size < bytes) {
        size_t size = d->staging_size ? d->staging_size : ((size_t)1 << 16);
        while (size < bytes) size *= 2;
        cl_int err;
        cl_mem m = clCreateBuffer(d->context, CL_MEM_READ_ONLY, size, NULL, &err);
        if (!m) return cl_fail(err, "clCreateBuffer (staging)");
        /* the old one lives until the commands already queued on it have run */
        if (d->staging) clReleaseMemObject(d->staging);
        d->staging = m;
        d->staging_size = size;
    }
    *out = d->staging;
    return KILN_OK;
}

/* The widest unit (4, 2 or 1 bytes) dividing every argument. */
static size_t unit_of(size_t a, size_t b, size_t c) {
    size_t all = a | b | c;
    return (all & 3) == 0 ? 4 : (all & 1) == 0 ? 2 : 1;
}

kiln_status cl_copy_mem(cl_dev *d, cl_mem src, size_t src_off, cl_mem dst, size_t dst_off, size_t bytes) {
    if (!bytes) return KILN_OK;
    size_t unit = unit_of(src_off, dst_off, bytes);
    cl_call c = cl_begin(d, "memory", unit == 4 ? "copy_u32" : unit == 2 ? "copy_u16" : "copy_u8");
    cl_arg_mem(&c, src, src_off / unit);
    cl_arg_mem(&c, dst, dst_off / unit);
    cl_arg_i64(&c, (int64_t)(bytes / unit));
    return cl_run_1d(&c, bytes / unit);
}

kiln_status cl_fill_mem(cl_dev *d, cl_mem dst, size_t dst_off, size_t count, size_t elem_size, uint32_t pattern) {
    if (!count) return KILN_OK;
    cl_call c = cl_begin(d, "memory", elem_size == 2 ? "fill_u16" : "fill_u32");
    cl_arg_mem(&c, dst, dst_off / elem_size);
    cl_arg_i64(&c, (int64_t)count);
    cl_arg_u32(&c, pattern);
    return cl_run_1d(&c, count);
}

kiln_status cl_upload(void *dev, kiln_ref dst, const void *src, size_t bytes) {
    cl_dev *d = dev;
    cl_reap_staging(d, 0);
    for (size_t done = 0; done < bytes;) {
        size_t n = bytes - done < CL_UPLOAD_CHUNK ? bytes - done : CL_UPLOAD_CHUNK;
        if (d->pending_bytes + n > CL_PENDING_MAX_BYTES) cl_reap_staging(d, 1);
        if (d->n_pending == d->cap_pending) {
            int cap = d->cap_pending ? 2 * d->cap_pending : 16;
            cl_pending *grown = realloc(d->pending, (size_t)cap * sizeof *grown);
            if (!grown) return kiln_set_error(KILN_ERR_MEMORY, "out of host memory");
            d->pending = grown;
            d->cap_pending = cap;
        }
        cl_mem stage = NULL;
        kiln_status s = staging(d, n, &stage);
        if (s) return s;
        void *copy = malloc(n);
        if (!copy) return kiln_set_error(KILN_ERR_MEMORY, "opencl: out of host memory staging %zu bytes", n);
        memcpy(copy, (const char *)src + done, n);
        cl_event ev;
        cl_int err = clEnqueueWriteBuffer(d->queue, stage, CL_FALSE, 0, n, copy, 0, NULL, &ev);
        if (err != CL_SUCCESS) {
            free(copy);
            return cl_fail(err, "clEnqueueWriteBuffer (upload)");
        }
        d->pending[d->n_pending++] = (cl_pending){.event = ev, .data = copy, .bytes = n};
        d->pending_bytes += n;
        s = cl_copy_mem(d, stage, 0, dst.buf->block->mem, dst.buf->off + dst.off + done, n);
        if (s) return s;
        done += n;
    }
    return KILN_OK;
}

kiln_status cl_download(void *dev, kiln_ref src, void *dst, size_t bytes) {
    cl_dev *d = dev;
    if (!bytes) return KILN_OK;
    cl_mem mem = src.buf->block->mem;
    size_t off = src.buf->off + src.off;
    cl_int err;
    if (d->host_unified) {
        void *p = clEnqueueMapBuffer(d->queue, mem, CL_TRUE, CL_MAP_READ, off, bytes, 0, NULL, NULL, &err);
        if (!p) return cl_fail(err, "clEnqueueMapBuffer (a kernel before it may have failed)");
        memcpy(dst, p, bytes);
        err = clEnqueueUnmapMemObject(d->queue, mem, p, 0, NULL, NULL);
        if (err != CL_SUCCESS) return cl_fail(err, "clEnqueueUnmapMemObject");
    } else {
        err = clEnqueueReadBuffer(d->queue, mem, CL_TRUE, off, bytes, dst, 0, NULL, NULL);
        if (err != CL_SUCCESS) return cl_fail(err, "clEnqueueReadBuffer (a kernel before it may have failed)");
    }
    cl_reap_staging(d, 0);
    if (d->profile) cl_prof_collect(d);
    return KILN_OK;
}

kiln_status cl_sync(void *dev) {
    cl_dev *d = dev;
    cl_int err = clFinish(d->queue);
    if (err != CL_SUCCESS) return cl_fail(err, "clFinish (a queued kernel failed)");
    cl_reap_staging(d, 1);
    if (d->profile) cl_prof_collect(d);
    return KILN_OK;
}
