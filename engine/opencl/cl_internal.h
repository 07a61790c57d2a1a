/* The OpenCL backend: declarations shared by the files in engine/opencl/.
 *
 *   cl_device.c     platforms and devices: listing, choosing, opening, the kernel table
 *   cl_program.c    run-time compilation of cl/<family>.cl, kernel lookup, build logs
 *   cl_cache.c      the on-disk cache of program binaries
 *   cl_memory.c     the sub-allocator over large cl_mem blocks
 *   cl_transfer.c   upload, download, sync (the only calls that wait)
 *   cl_launch.c     setting arguments, enqueueing kernels, profiling
 *   cl_probe.c      device measurement: timers, the FMA, copy and dispatch probes
 *   cl_gemm_tuning.c  the per-device GEMM block sizes (cl_gemm.h)
 * and the host side of the kernels, one file per op family, named as the CPU backend's
 * cpu_<family>.c (each names the cl/<family>.cl files whose kernels it launches):
 *   cl_activation.c         activations
 *   cl_attention.c          fused attention (FlashAttention-2), forward and backward
 *   cl_attention_entropy.c  attention entropy
 *   cl_constants.c          fill, the sinusoid table and the inf/NaN check
 *   cl_cross_entropy.c      cross-entropy
 *   cl_dropout.c            dropout
 *   cl_elementwise.c        axpby, binary, sum_rows
 *   cl_embedding.c          embedding lookup and its backward
 *   cl_gemm.c               the matmul family's GEMM: variant choice, packing, launch
 *   cl_norm.c               LayerNorm and RMSNorm
 *   cl_optim.c              gradient clipping coefficient and Adam(W)
 *   cl_quant.c              the product with a quantized matrix
 *   cl_reduce.c             reductions to a scalar
 *   cl_shape.c              permute, block copies and the dtype cast
 *   cl_softmax.c            masked softmax
 *
 * Every kernel call is enqueued on one in-order queue and returns at once; the host waits
 * only in download() and sync().
 *
 * Threads. A device (a cl_dev, one kiln context) is used by one thread at a time, as every
 * kiln context is: its queue, allocator, upload staging, program and kernel tables, profiler,
 * and the argument lists of its cl_kernels (clSetKernelArg is the one OpenCL call that is
 * not thread-safe on a shared object) have no locks. Devices open on different threads run
 * concurrently, because nothing mutable is shared between them: the embedded sources, the
 * kernel_abi.h text, the GEMM tuning table and the backend table are read-only; the binary
 * cache on disk is written through temporary files unique to a process and a write, then
 * renamed (kiln/file.h); the cache counters are atomic; error messages are per thread
 * (core/error.c). */
#ifndef KILN_OPENCL_INTERNAL_H
#define KILN_OPENCL_INTERNAL_H

#include <stdatomic.h>

#define CL_TARGET_OPENCL_VERSION 300
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl.h>

#include "abi/kernel_abi.h"
#include "core/internal.h"
#include "kernel_operands.h"

/* ---- the embedded kernel sources (generated at build time from cl/<family>.cl) ---- */
typedef struct cl_source_file {
    const char *name; /* "gemm" for cl/gemm.cl */
    const char *text;
} cl_source_file;
extern const cl_source_file kiln_cl_sources[];
extern const int kiln_cl_source_count;
/* engine/abi/kernel_abi.h, which cl_build_program puts in front of every program */
extern const char kiln_cl_abi_header[];

/* ---- memory ---- */
typedef struct cl_block {
    cl_mem mem;
    size_t size;
    int dedicated;         /* holds one large buffer only; released when it is freed */
    size_t used;           /* bytes handed out */
    struct cl_range *free; /* free ranges sorted by offset */
    struct cl_block *next;
} cl_block;

struct kiln_buf {
    cl_block *block;
    size_t off;  /* byte offset of this buffer in the block (a multiple of CL_ALIGN) */
    size_t size; /* bytes, rounded up to CL_ALIGN */
};

/* Sub-buffer offsets are multiples of this, so every element type is aligned and whole
 * cache lines / vector loads start on a boundary. */
#define CL_ALIGN 256

/* ---- programs ----
 * A family that takes a dtype is built twice from its one text: the f32 variant and the f16
 * variant (KILN_F16 defined to 1, cl/common.cl), each built, cached and looked up apart. */
#define CL_MAX_KERNELS 192
#define CL_MAX_PROGRAMS 48
typedef struct cl_kernel_entry {
    const char *family;
    int f16; /* from the f16 variant of the family */
    char name[48];
    cl_kernel kernel;
    cl_uint num_args; /* CL_KERNEL_NUM_ARGS: cl_run refuses a call that set another number */
} cl_kernel_entry;

typedef struct cl_program_entry {
    const char *family;
    int f16;
    cl_program program;
} cl_program_entry;

/* A host copy of uploaded data, kept until its non-blocking write has completed. */
typedef struct cl_pending {
    cl_event event;
    void *data;
    size_t bytes;
} cl_pending;

/* Profiling: per-kernel device time, collected when KILN_CL_PROFILE=1. */
typedef struct cl_prof_pending {
    cl_event event;
    const char *name;
} cl_prof_pending;
typedef struct cl_prof_total {
    const char *name;
    long count;
    double ms, min_ms;
} cl_prof_total;

/* The GEMM configuration chosen for a device (cl_gemm_tuning.c). */
typedef struct cl_gemm_config {
    char variant[16];        /* for large products: "cpu" or "tiled" */
    int mr, nr, vw;          /* gemm_cpu block */
    int tm, tn, kt, wm, wn;  /* gemm_tiled tile */
    int rx, ry;              /* gemm_tiled work-group: tn / wn by tm / wm work-items */
    char defines[320];       /* the same as #define lines, prepended to cl/gemm.cl */
} cl_gemm_config;

typedef struct cl_dev {
    cl_platform_id platform;
    cl_device_id device;
    cl_context context;
    cl_command_queue queue;
    char name[300];
    char device_key[700]; /* device, driver and platform versions: the binary-cache key */

    /* capabilities */
    int is_gpu, is_cpu;
    int host_unified;   /* CL_DEVICE_HOST_UNIFIED_MEMORY: map instead of copy */
    int has_fp16;       /* cl_khr_fp16 (f16 arithmetic; f16 storage works everywhere) */
    int has_fp64;
    int has_subgroups;  /* cl_khr_subgroups or OpenCL 2.1+ core sub-groups */
    cl_uint compute_units, clock_mhz;
    size_t max_wg;      /* CL_DEVICE_MAX_WORK_GROUP_SIZE */
    cl_ulong local_mem, global_mem, max_alloc;
    size_t wg;          /* work-group size for row kernels and reductions (power of 2) */
    size_t wg_elem;     /* work-group size for elementwise kernels */
    char build_options[256];

    /* memory */
    cl_block *blocks;
    size_t block_size;   /* size of an ordinary block */
    size_t mem_limit;    /* refuse allocations beyond this many bytes in total */
    size_t mem_reserved; /* bytes in blocks */
    cl_mem dummy;        /* bound for absent optional operands */

    /* uploads (cl_transfer.c): the staging buffer and the host copies still being written */
    cl_mem staging;
    size_t staging_size;
    cl_pending *pending;
    int n_pending, cap_pending;
    size_t pending_bytes;

    /* programs and kernels, built on first use */
    cl_program_entry programs[CL_MAX_PROGRAMS];
    int n_programs;
    cl_kernel_entry kernels[CL_MAX_KERNELS];
    int n_kernels;

    /* profiling and tracing (cl_launch.c) */
    int profile, trace;
    cl_prof_pending *prof_pending;
    int n_prof_pending, cap_prof_pending;
    cl_prof_total *prof_totals;
    int n_prof_totals, cap_prof_totals;

    /* GEMM: the tuned configuration, and a variant forced by kiln_set_gemm_variant or
     * KILN_CL_GEMM (gemm_env, read at open), or NULL */
    cl_gemm_config gemm;
    const char *gemm_force, *gemm_env;
} cl_dev;

/* ---- cl_device.c ---- */
const char *cl_error_name(cl_int err);
/* Sets a KILN_ERR_DEVICE error "opencl: <what> failed: <CL error name>". */
kiln_status cl_fail(cl_int err, const char *what);

/* ---- cl_program.c ---- */
/* The kernel `name` from cl/<family>.cl (its f16 variant when f16 is 1), building the
 * program on first use. NULL with the error set (including the build log) when it does not
 * compile or has no such kernel. */
const cl_kernel_entry *cl_find_kernel(cl_dev *d, const char *family, const char *name, int f16);
/* Builds a program from `source` with engine/abi/kernel_abi.h in front of it (for a family:
 * its text with common.cl before it); `family` names it in messages and in the binary
 * cache. Used by cl_find_kernel and by the tests. */
kiln_status cl_build_program(cl_dev *d, const char *family, const char *source, cl_program *out);
void cl_release_programs(cl_dev *d);
/* How programs were obtained, counted over the whole process for the cache tests: binaries
 * loaded from the cache and written to it. Atomic: devices open on other threads count too. */
extern atomic_int kiln_cl_cache_hits, kiln_cl_cache_writes;

/* ---- cl_cache.c ---- */
/* 64-bit FNV-1a, chained: hash = cl_hash(hash, data, n). Start from CL_HASH_INIT. */
#define CL_HASH_INIT 1469598103934665603ull
uint64_t cl_hash(uint64_t hash, const void *data, size_t n);
/* The cache key of a program: device, driver and compile options, and `text`, all that the
 * compiler is given (every #included fact is in it: the kernels #include nothing). */
uint64_t cl_cache_key(const cl_dev *d, const char *text);
/* Reads the cached binary for key into a malloc'd buffer; NULL when absent. */
unsigned char *cl_cache_read(uint64_t key, const char *family, size_t *size);
/* Writes it atomically; failures are silent (a cache is an optimization). */
void cl_cache_write(uint64_t key, const char *family, const unsigned char *data, size_t size);

/* ---- cl_memory.c ---- */
kiln_status cl_mem_init(cl_dev *d);
/* The device's memory for kiln_device_memory (kiln/context.h): global memory, the limit kiln
 * keeps (KILN_CL_MEM_LIMIT), the largest allocation. */
kiln_status cl_memory_info(void *dev, kiln_memory_info *out);
void cl_mem_release_all(cl_dev *d);
kiln_status cl_alloc(void *dev, size_t bytes, kiln_buf **out);
void cl_free(void *dev, kiln_buf *buf);
/* A scratch buffer for the duration of one kernel sequence: it may be freed right after
 * the kernels using it are enqueued, because every later use of its bytes is enqueued
 * after them on the same in-order queue. */
kiln_status cl_temp(cl_dev *d, size_t bytes, kiln_buf **out);

/* ---- cl_transfer.c ---- */
kiln_status cl_upload(void *dev, kiln_ref dst, const void *src, size_t bytes);
kiln_status cl_download(void *dev, kiln_ref src, void *dst, size_t bytes);
kiln_status cl_sync(void *dev);
/* Kernel copies and fills of raw ranges (byte offsets), used by upload, fill and cast. */
kiln_status cl_copy_mem(cl_dev *d, cl_mem src, size_t src_off, cl_mem dst, size_t dst_off, size_t bytes);
kiln_status cl_fill_mem(cl_dev *d, cl_mem dst, size_t dst_off, size_t count, size_t elem_size, uint32_t pattern);
/* Frees the host copies whose writes have completed (wait: all, waiting for them). */
void cl_reap_staging(cl_dev *d, int wait);

/* ---- cl_launch.c ---- */
/* Building a kernel's argument list: each call appends; the first error sticks and is
 * reported by cl_run, which also refuses a list whose length is not the kernel's parameter
 * count. A reference is passed as two arguments: the block's cl_mem and the element offset
 * (ulong), so kernels index `p[off + i]` and offsets need no alignment beyond the element
 * size. An absent reference passes a dummy buffer and offset 0. */
typedef struct cl_call {
    cl_dev *dev;
    cl_kernel kernel;
    const char *family, *name;
    cl_uint num_args; /* the kernel's parameters */
    cl_uint n;        /* arguments set so far */
    cl_int err;
    kiln_status status;
} cl_call;

/* A call of a kernel from the f32 program of its family. */
cl_call cl_begin(cl_dev *d, const char *family, const char *name);
/* A call of a kernel whose `dtype` operands are f32 or f16: the kernel from the variant of
 * the family for that dtype. Any other dtype is a KILN_ERR_DTYPE error, reported by cl_run. */
cl_call cl_begin_dt(cl_dev *d, const char *family, const char *name, kiln_dtype dtype);
void cl_arg_ref(cl_call *c, kiln_ref r, size_t elem_size);
/* A kernel's operand as core/kernel_slots.def declares it: the index of its parameter in
 * cl/<program>.cl (checked against the source at configure time) and its name. */
typedef struct cl_operand {
    unsigned param;
    const char *name;
} cl_operand;
#define CL_OP(kernel, operand) ((cl_operand){.param = KILN_CL_OP_##kernel##_##operand, .name = #operand})
/* cl_arg_ref for the operand op: refuses (the error reported by cl_run, naming the kernel
 * and the operand) an operand passed at another parameter than the kernel's. */
void cl_arg_op(cl_call *c, cl_operand op, kiln_ref r, size_t elem_size);
void cl_arg_mem(cl_call *c, cl_mem mem, size_t elem_off);
void cl_arg_u32(cl_call *c, uint32_t v);
void cl_arg_f32(cl_call *c, float v);
void cl_arg_i32(cl_call *c, int v);
void cl_arg_i64(cl_call *c, int64_t v);
void cl_arg_u64(cl_call *c, uint64_t v);
/* A `__local` pointer parameter: work-group scratch of `bytes`, sized at launch (a kernel
 * whose tiles follow the device's local memory and the problem, cl/attention.cl). */
void cl_arg_local(cl_call *c, size_t bytes);
/* Enqueues over `dims` dimensions; global sizes are rounded up to the local sizes.
 * local == NULL lets the driver choose. */
kiln_status cl_run(cl_call *c, int dims, const size_t *global, const size_t *local);
/* The common case: n work-items in 1-D groups of the device's default size. */
kiln_status cl_run_1d(cl_call *c, size_t n);
/* One work-group of d->wg items per row, `rows` rows. */
kiln_status cl_run_rows(cl_call *c, size_t rows);
/* One work-group of d->wg items per tile of min(d->wg, KILN_ABI_CL_COLUMN_TILE) columns:
 * the column sums (sum_rows, norm_bwd_params). */
kiln_status cl_run_column_tiles(cl_call *c, int64_t cols);
/* Keeps a profiling event of a command that is not a kernel (fills, copies); pass the
 * event only when d->profile is set. */
void cl_track(cl_dev *d, cl_event ev, const char *name);
void cl_prof_collect(cl_dev *d);
void cl_prof_report(cl_dev *d);

/* Number of work-groups a grid-stride kernel over n elements uses. */
size_t cl_groups_for(const cl_dev *d, size_t n);

static inline int cl_has(kiln_ref r) { return r.buf != NULL; }

/* ---- kernels (the op-family files above) ---- */
/* the kernels, cl_<slot> for each slot of core/kernel_slots.def */
#define KILN_SLOT(family, slot, args, output, output_dtype) kiln_status cl_##slot(void *dev, const args *a);
#include "core/kernel_slots.def"
int cl_gemm_variants(void *dev, const char **names, int cap);
kiln_status cl_set_gemm_variant(void *dev, const char *name);

#endif
