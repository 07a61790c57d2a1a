/* The CPU backend's device: host memory, synchronous execution, and the kernel table. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "cpu/cpu_internal.h"
#include "cpu/cpu_probe.h"


typedef struct cpu_dev {
    char name[96];
} cpu_dev;

static void cpu_close(void *dev) { free(dev); }
static const char *cpu_device_name(void *dev) { return ((cpu_dev *)dev)->name; }

static kiln_status cpu_alloc(void *dev, size_t bytes, kiln_buf **out) {
    (void)dev;
    kiln_buf *b = malloc(sizeof *b);
    /* 64-byte alignment: whole cache lines, and aligned vector loads in the GEMM */
    size_t rounded = (bytes + 63) / 64 * 64;
    void *p = b ? aligned_alloc(64, rounded ? rounded : 64) : NULL;
    if (!p) {
        free(b);
        return kiln_set_error(KILN_ERR_MEMORY, "cpu: out of memory allocating %zu bytes", bytes);
    }
    b->ptr = p;
    b->size = bytes;
    *out = b;
    return KILN_OK;
}

static void cpu_free(void *dev, kiln_buf *buf) {
    (void)dev;
    if (!buf) return;
    free(buf->ptr);
    free(buf);
}

static kiln_status cpu_upload(void *dev, kiln_ref dst, const void *src, size_t bytes) {
    (void)dev;
    memcpy(CPU_PTR(dst, char), src, bytes);
    return KILN_OK;
}

static kiln_status cpu_download(void *dev, kiln_ref src, void *dst, size_t bytes) {
    (void)dev;
    memcpy(dst, CPU_PTR(src, char), bytes);
    return KILN_OK;
}

static kiln_status cpu_sync(void *dev) {
    (void)dev;
    return KILN_OK;
}

/* The host's memory: its RAM, and no more than the process's cgroup allows. */
static kiln_status cpu_memory_info(void *dev, kiln_memory_info *out) {
    (void)dev;
    uint64_t limit = kiln_host_cgroup_limit();
    out->total = kiln_host_ram();
    out->usable = limit < out->total ? limit : out->total;
    out->max_buffer = 0;
    return KILN_OK;
}

static const kiln_backend g_cpu = {
    .name = "cpu",
    .close = cpu_close,
    .device_name = cpu_device_name,
    .alloc = cpu_alloc,
    .free = cpu_free,
    .upload = cpu_upload,
    .download = cpu_download,
    .sync = cpu_sync,
    .max_buffer_bytes = 0,
    .offset_alignment = 64,
    .memory_info = cpu_memory_info,
    /* the kernels: .<slot> = cpu_<slot> for each slot of core/kernel_slots.def */
#define KILN_SLOT(family, slot, args, output, output_dtype) .slot = cpu_##slot,
#include "core/kernel_slots.def"
    .qmatmul_rounds_x = cpu_qmatmul_rounds_x,
    .timer_begin = cpu_timer_begin,
    .timer_end = cpu_timer_end,
    .driver_info = cpu_driver_info,
    .probe_fma = cpu_probe_fma,
    .probe_copy = cpu_probe_copy,
    .probe_dispatch = cpu_probe_dispatch,
};

/* The OpenMP team size the kernels fork (1 without OpenMP). */
int cpu_max_threads(void) {
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

kiln_status kiln_cpu_open(int index, const kiln_backend **table, void **dev) {
    if (index > 0)
        return kiln_set_error(KILN_ERR_NO_DEVICE, "cpu:%d does not exist; the cpu backend has one device, cpu:0", index);
    cpu_dev *d = calloc(1, sizeof *d);
    if (!d) return kiln_set_error(KILN_ERR_MEMORY, "out of host memory");
    const int threads = cpu_max_threads();
    snprintf(d->name, sizeof d->name, "cpu (%d thread%s)", threads, threads == 1 ? "" : "s");
    *table = &g_cpu;
    *dev = d;
    return KILN_OK;
}

kiln_status kiln_cpu_list(void *out_file) {
    const int threads = cpu_max_threads();
    fprintf((FILE *)out_file, "cpu:0  reference backend, %d OpenMP thread%s, f32/f16/i32\n", threads,
            threads == 1 ? "" : "s");
    return KILN_OK;
}
