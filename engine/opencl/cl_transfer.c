/* Host <-> device transfers, fills and copies, and synchronization (the only waits).
 *
 * upload() must not block (a training step uploads a batch of tokens between kernels), yet
 * the caller may free its memory as soon as it returns. The data is therefore copied at
 * once into a temporary cl_mem (CL_MEM_COPY_HOST_PTR) and moved into place by a copy
 * kernel; the temporary is released right away and lives until that kernel has run.
 * Fills and copies are kernels too (cl/memory.cl says why).
 *
 * download() blocks. On host-unified devices (CPU devices, integrated GPUs) the blocks live
 * in host-allocated memory (CL_MEM_ALLOC_HOST_PTR) and are mapped rather than copied. */
#include <string.h>

#include "opencl/cl_internal.h"

/* Uploads larger than this go in pieces, so the temporary copy stays bounded. */
#define CL_UPLOAD_CHUNK ((size_t)64 << 20)

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
    for (size_t done = 0; done < bytes;) {
        size_t n = bytes - done < CL_UPLOAD_CHUNK ? bytes - done : CL_UPLOAD_CHUNK;
        cl_int err;
        cl_mem tmp = clCreateBuffer(d->context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, n,
                                    (void *)((const char *)src + done), &err);
        if (!tmp) return cl_fail(err, "clCreateBuffer (upload)");
        kiln_status s = cl_copy_mem(d, tmp, 0, dst.buf->block->mem, dst.buf->off + dst.off + done, n);
        clReleaseMemObject(tmp); /* freed once the copy has run */
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
    if (d->profile) cl_prof_collect(d);
    return KILN_OK;
}

kiln_status cl_sync(void *dev) {
    cl_dev *d = dev;
    cl_int err = clFinish(d->queue);
    if (err != CL_SUCCESS) return cl_fail(err, "clFinish (a queued kernel failed)");
    if (d->profile) cl_prof_collect(d);
    return KILN_OK;
}
