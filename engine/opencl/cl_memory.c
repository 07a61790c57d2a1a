/* Device memory: a sub-allocator over a few large cl_mem blocks.
 *
 * kiln allocates a buffer per persistent tensor and a few arena blocks; creating a cl_mem
 * for each would cost a driver call apiece and hit allocation-count limits on some devices.
 * Instead buffers are ranges of large blocks, and kernels receive (block, element offset)
 * pairs (cl_launch.c), never sub-buffers, whose origins would need
 * CL_DEVICE_MEM_BASE_ADDR_ALIGN alignment that tensor views do not have.
 *
 * Freeing is immediate and safe with queued work: every command runs on one in-order queue,
 * so a range handed out again is only touched by commands enqueued after those that used it
 * before. A released cl_mem lives on until the commands using it finish (OpenCL 1.2, 5.4.1).
 *
 * Requests larger than half a block get a block of their own (up to
 * CL_DEVICE_MAX_MEM_ALLOC_SIZE). Emptied blocks are kept and reused (the GEMM's packing
 * buffers, the arena after a reset) rather than released and created again: driver
 * allocations are slow, and oclgrind (21.10) keeps stale shadow state for a buffer id that
 * is reused, which shows up as false uninitialized reads. Idle blocks are released when they
 * exceed a quarter of the memory limit, and all of them before an allocation would fail.
 * The total is capped by the device's global memory, or by KILN_CL_MEM_LIMIT (bytes) when
 * set, which the tests use to provoke out-of-memory; KILN_CL_MAX_BUFFER (bytes) lowers the
 * largest allocation likewise. */
#include <stdlib.h>
#include <string.h>

#include "opencl/cl_internal.h"

typedef struct cl_range {
    size_t off, size;
    struct cl_range *next;
} cl_range;

#define CL_BLOCK_DEFAULT ((size_t)64 << 20)

static size_t env_bytes(const char *name) {
    const char *v = getenv(name);
    return v && *v ? (size_t)strtoull(v, NULL, 10) : 0;
}

kiln_status cl_mem_init(cl_dev *d) {
    /* KILN_CL_MAX_BUFFER caps the largest buffer below the device's: it simulates devices
     * with small allocations, and keeps oclgrind's per-buffer shadow memory small */
    size_t cap = env_bytes("KILN_CL_MAX_BUFFER");
    if (cap >= CL_ALIGN && cap < d->max_alloc) d->max_alloc = cap;
    /* ordinary blocks: 64 MiB, or a quarter of the largest allocation on small devices (and
     * under KILN_CL_MAX_BUFFER: oclgrind's race checker costs time per allocated byte at
     * every kernel launch) */
    d->block_size = CL_BLOCK_DEFAULT;
    if (d->block_size > d->max_alloc / 4) d->block_size = (size_t)(d->max_alloc / 4) / CL_ALIGN * CL_ALIGN;
    if (d->block_size > d->global_mem / 8)
        d->block_size = (size_t)(d->global_mem / 8) / CL_ALIGN * CL_ALIGN;
    if (d->block_size < CL_ALIGN) d->block_size = CL_ALIGN;
    d->mem_limit = (size_t)d->global_mem;
    size_t lim = env_bytes("KILN_CL_MEM_LIMIT");
    if (lim > 0 && lim < d->mem_limit) d->mem_limit = lim;
    if (d->block_size > d->mem_limit) d->block_size = d->mem_limit / CL_ALIGN * CL_ALIGN;
    cl_int err;
    d->dummy = clCreateBuffer(d->context, CL_MEM_READ_WRITE, CL_ALIGN, NULL, &err);
    if (!d->dummy) return cl_fail(err, "clCreateBuffer (placeholder for absent operands)");
    return KILN_OK;
}

kiln_status cl_memory_info(void *dev, kiln_memory_info *out) {
    const cl_dev *d = dev;
    out->total = d->global_mem;
    out->usable = d->mem_limit;
    out->max_buffer = d->max_alloc;
    return KILN_OK;
}

static void release_block(cl_dev *d, cl_block *b) {
    cl_block **pp = &d->blocks;
    while (*pp && *pp != b) pp = &(*pp)->next;
    if (*pp) *pp = b->next;
    while (b->free) {
        cl_range *r = b->free;
        b->free = r->next;
        free(r);
    }
    clReleaseMemObject(b->mem);
    d->mem_reserved -= b->size;
    free(b);
}

void cl_mem_release_all(cl_dev *d) {
    while (d->blocks) release_block(d, d->blocks);
    if (d->dummy) clReleaseMemObject(d->dummy);
    d->dummy = NULL;
}

/* Bytes in blocks that hold no buffer. */
static size_t idle_bytes(const cl_dev *d) {
    size_t total = 0;
    for (const cl_block *b = d->blocks; b; b = b->next)
        if (b->used == 0) total += b->size;
    return total;
}

/* Releases every idle block; returns the bytes given back. */
static size_t trim(cl_dev *d) {
    size_t freed = 0;
    cl_block *b = d->blocks;
    while (b) {
        cl_block *next = b->next;
        if (b->used == 0) {
            freed += b->size;
            release_block(d, b);
        }
        b = next;
    }
    return freed;
}

static int alloc_failure(cl_int err) {
    return err == CL_MEM_OBJECT_ALLOCATION_FAILURE || err == CL_OUT_OF_RESOURCES ||
           err == CL_OUT_OF_HOST_MEMORY || err == CL_INVALID_BUFFER_SIZE;
}

static kiln_status new_block(cl_dev *d, size_t size, int dedicated, cl_block **out) {
    if (size > d->max_alloc)
        return kiln_set_error(KILN_ERR_MEMORY,
                              "opencl: a buffer of %zu bytes exceeds %s's largest allocation "
                              "(%llu bytes)", size, d->name, (unsigned long long)d->max_alloc);
    if (d->mem_reserved + size > d->mem_limit) trim(d);
    if (d->mem_reserved + size > d->mem_limit)
        return kiln_set_error(KILN_ERR_MEMORY,
                              "opencl: out of device memory on %s: %zu bytes more requested, "
                              "%zu of %zu in use (free tensors, or use a smaller batch)",
                              d->name, size, d->mem_reserved, d->mem_limit);
    cl_block *b = calloc(1, sizeof *b);
    cl_range *r = dedicated ? NULL : malloc(sizeof *r);
    if (!b || (!dedicated && !r)) {
        free(b);
        free(r);
        return kiln_set_error(KILN_ERR_MEMORY, "out of host memory");
    }
    /* Host-unified devices (integrated GPUs, CPU devices) get host-allocated memory, which
     * downloads can map instead of copying. */
    cl_mem_flags flags = CL_MEM_READ_WRITE | (d->host_unified ? CL_MEM_ALLOC_HOST_PTR : 0);
    cl_int err;
    b->mem = clCreateBuffer(d->context, flags, size, NULL, &err);
    if (!b->mem && alloc_failure(err) && trim(d) > 0)
        b->mem = clCreateBuffer(d->context, flags, size, NULL, &err);
    if (!b->mem) {
        free(b);
        free(r);
        if (alloc_failure(err))
            return kiln_set_error(KILN_ERR_MEMORY,
                                  "opencl: out of device memory on %s allocating %zu bytes (%s)",
                                  d->name, size, cl_error_name(err));
        return cl_fail(err, "clCreateBuffer");
    }
    b->size = size;
    b->dedicated = dedicated;
    if (r) {
        r->off = 0;
        r->size = size;
        r->next = NULL;
        b->free = r;
    }
    b->next = d->blocks;
    d->blocks = b;
    d->mem_reserved += size;
    *out = b;
    return KILN_OK;
}

/* First fit in one block's free list; 1 on success. */
static int take_range(cl_block *b, size_t size, size_t *off) {
    for (cl_range **pp = &b->free; *pp; pp = &(*pp)->next) {
        cl_range *r = *pp;
        if (r->size < size) continue;
        *off = r->off;
        r->off += size;
        r->size -= size;
        if (r->size == 0) {
            *pp = r->next;
            free(r);
        }
        b->used += size;
        return 1;
    }
    return 0;
}

kiln_status cl_alloc(void *dev, size_t bytes, kiln_buf **out) {
    cl_dev *d = dev;
    size_t size = (size_t)kiln_round_up((int64_t)(bytes ? bytes : 1), CL_ALIGN);
    kiln_buf *buf = malloc(sizeof *buf);
    if (!buf) return kiln_set_error(KILN_ERR_MEMORY, "out of host memory");
    cl_block *b = NULL;
    kiln_status s = KILN_OK;
    size_t off = 0;
    if (size > d->block_size / 2) {
        /* the smallest idle block of our own that fits without wasting more than half */
        cl_block *best = NULL;
        for (cl_block *c = d->blocks; c; c = c->next)
            if (c->dedicated && c->used == 0 && c->size >= size && c->size / 2 <= size &&
                (!best || c->size < best->size))
                best = c;
        b = best;
        if (!b) s = new_block(d, size, 1, &b);
    } else {
        for (b = d->blocks; b; b = b->next)
            if (!b->dedicated && take_range(b, size, &off)) break;
        if (!b) {
            s = new_block(d, d->block_size, 0, &b);
            if (!s && !take_range(b, size, &off)) s = kiln_set_error(KILN_ERR_MEMORY, "opencl: allocator");
        }
    }
    if (s) {
        free(buf);
        return s;
    }
    if (b->dedicated) b->used = b->size;
    buf->block = b;
    buf->off = off;
    buf->size = size;
    *out = buf;
    return KILN_OK;
}

/* Returns [off, off+size) to the block's free list, merging with its neighbours. */
static void give_range(cl_block *b, size_t off, size_t size) {
    cl_range **pp = &b->free;
    while (*pp && (*pp)->off < off) pp = &(*pp)->next;
    cl_range *next = *pp;
    /* the range just before, if any, is the one whose next pointer is pp */
    cl_range *prev = NULL;
    for (cl_range *r = b->free; r && r != next; r = r->next) prev = r;
    b->used -= size;
    if (prev && prev->off + prev->size == off) {
        prev->size += size;
        if (next && prev->off + prev->size == next->off) {
            prev->size += next->size;
            prev->next = next->next;
            free(next);
        }
        return;
    }
    if (next && off + size == next->off) {
        next->off = off;
        next->size += size;
        return;
    }
    cl_range *r = malloc(sizeof *r);
    if (!r) return; /* the range is lost to this block until it is released: harmless */
    r->off = off;
    r->size = size;
    r->next = next;
    *pp = r;
}

void cl_free(void *dev, kiln_buf *buf) {
    cl_dev *d = dev;
    if (!buf) return;
    cl_block *b = buf->block;
    if (b->dedicated)
        b->used = 0;
    else
        give_range(b, buf->off, buf->size);
    /* an emptied block stays for reuse, unless idle memory has grown past a quarter */
    if (b->used == 0 && idle_bytes(d) > d->mem_limit / 4) release_block(d, b);
    free(buf);
}

kiln_status cl_temp(cl_dev *d, size_t bytes, kiln_buf **out) { return cl_alloc(d, bytes, out); }
