/* The Vulkan backend's private declarations.
 *
 * Files, one concern each:
 *   vk_instance.c  the loader (volk), the shared VkInstance, validation, device listing
 *   vk_device.c    opening a device: features, limits (and the minimum-limits test mode)
 *   vk_memory.c    blocks, sub-allocation, staging, upload/download, deferred frees
 *   vk_commands.c  command recording, barriers, submission, completion
 *   vk_pipeline.c  shader modules, pipelines, descriptor sets, the on-disk pipeline cache
 *   vk_shaders.c   the embedded modules by id (vk_shaders.h): their interfaces checked, the
 *                  build of a kernel for a device and dtype (vk_variant)
 *   vk_spirv.c     reflection of a module's bindings and push block
 *   vk_profile.c   GPU timestamps per kernel (KILN_VK_PROFILE=1)
 *   vk_backend.c   the kernel table and kiln_vulkan_open
 *   vk_<family>.c  the host side of each kernel family (push constants, grids, variants)
 *
 * Binding model: every tensor lives in a "block" (one VkDeviceMemory bound to one VkBuffer).
 * A kernel binds each operand's byte range starting at an offset aligned down to
 * minStorageBufferOffsetAlignment, and gets the operand's element offset from there in its
 * push constants: any view offset works (a multiple of the element size), and each binding
 * covers exactly what the kernel may touch, which is also what the hazard tracker (and the
 * synchronization validation layer) reason about. A binding addresses at most
 * max_operand_bytes (maxStorageBufferRange less alignment); kernels that may meet a larger
 * tensor split their work (vk_split.c), and vk_dispatch refuses an operand that does not
 * fit.
 *
 * Kernel interface: a kernel's operands are bindings 0 .. <KERNEL>_OPS - 1, and its push
 * block starts with their offsets, off[<KERNEL>_OPS] (shaders/push.h, included by the
 * shader and by the host). The backend checks every embedded module against that when the
 * first device opens, and vk_dispatch checks every launch against its module: a module or
 * a launch that disagrees fails the launch with one error naming the shader (vk_shaders.c).
 * Kinds, modes and tile sizes the host and the shaders share are engine/abi/kernel_abi.h's.
 *
 * Threading contract:
 *  - A device (the vk_dev behind one kiln context) is used by one thread at a time: its
 *    command recording, memory, hazard tracker and pipeline caches have no locks. Devices
 *    may be used from different threads at once, one device per thread, two contexts on
 *    the same physical device included.
 *  - Opening and closing devices (kiln_vulkan_open, the table's close) and listing them
 *    (kiln_vulkan_list) may happen on any thread, concurrently: the process-wide instance,
 *    its reference count and the list of open devices are guarded by a mutex
 *    (vk_instance.c); the embedded modules are checked once (pthread_once, vk_shaders.c).
 *  - The validation layer may report from any thread: its message count is guarded too.
 *  - Devices still open at process exit are abandoned, without Vulkan calls, by an atexit
 *    handler: no other thread may be using one by then.
 *  - Two devices of the same kind saving the on-disk pipeline cache at once write their own
 *    temporary files (kiln/file.h); the last rename wins (vk_pipeline.c). */
#ifndef KILN_VK_INTERNAL_H
#define KILN_VK_INTERNAL_H

#include "volk.h"

#include "abi/kernel_abi.h"
#include "core/internal.h"
#include "kernel_operands.h"
#include "vk_shaders.h"

#define VK_MAX_OPERANDS 8 /* storage buffers one kernel binds */
#define VK_MAX_SPEC 12    /* specialization constants one pipeline takes */
#define VK_PUSH_BYTES 128 /* the push-constant range every pipeline declares (Vulkan minimum) */
#define VK_RING 4         /* command buffers in flight */
#define VK_DUMMY_SLOTS 256      /* slots of the block bound for absent operands */
#define VK_DUMMY_SLOT_BYTES 256 /* >= any minStorageBufferOffsetAlignment */
#define VK_MAX_QUERIES 2048 /* timestamps per batch (KILN_VK_PROFILE): two per dispatch */

/* ---- the shared instance (vk_instance.c) ---- */

typedef struct vk_caps {
    /* limits kiln relies on (already lowered in minimum-limits mode) */
    uint32_t max_wg_invocations, max_wg_size[3], max_wg_count[3];
    uint32_t max_shared_bytes, max_push_bytes, max_storage_buffers;
    uint64_t max_storage_range, max_alloc_bytes, min_ssbo_align, min_texel_align;
    uint32_t max_texel_elements;
    uint32_t max_alloc_count;
    uint32_t subgroup_size; /* 0 when kiln must not use subgroup operations */
    /* optional features */
    int subgroup_arith;  /* subgroupAdd/Max in compute shaders */
    int subgroup_shuffle; /* subgroupShuffle in compute shaders */
    int storage16;       /* storageBuffer16BitAccess */
    int float16;         /* shaderFloat16 */
    int coopmat;         /* VK_KHR_cooperative_matrix with an f16 x f16 -> f32 16x16x16 shape */
    int int_dot;         /* VK_KHR_shader_integer_dot_product's shaderIntegerDotProduct (vk_quant.c) */
    uint32_t qmatmul_lanes; /* KILN_VK_QMATMUL_LANES, read once: 0, or the lanes per row tests force (vk_quant.c) */
    int texel_f16;       /* RGBA16F uniform texel buffers (required by Vulkan; checked anyway) */
    int driver_props;    /* VkPhysicalDeviceDriverProperties available */
    int portability_subset;
    int memory_budget;   /* VK_EXT_memory_budget: the heaps' budgets (kiln_device_memory) */
    uint32_t timestamp_bits;
    float timestamp_period;
} vk_caps;

typedef struct vk_physical {
    VkPhysicalDevice handle;
    VkPhysicalDeviceProperties props;
    char driver_name[VK_MAX_DRIVER_NAME_SIZE], driver_info[VK_MAX_DRIVER_INFO_SIZE];
    uint8_t device_uuid[VK_UUID_SIZE], driver_uuid[VK_UUID_SIZE];
    VkPhysicalDeviceMemoryProperties mem;
    uint64_t device_memory; /* bytes in device-local heaps */
    vk_caps caps;
    uint32_t queue_family; /* a compute queue family, UINT32_MAX when none */
    const char *unusable;  /* why kiln cannot run on it, or NULL */
} vk_physical;

/* Takes a reference on the process-wide instance (creating it on first use) and lists its
 * physical devices, in the order `vulkan:N` counts them (*devs is freed by the caller).
 * Fails with KILN_ERR_NO_BACKEND and a one-line message when the loader or a driver is
 * missing, holding no reference then. */
kiln_status vk_instance_open(VkInstance *inst, vk_physical **devs, uint32_t *count);
/* Drops a reference taken by vk_instance_open; the last one destroys the instance. */
void vk_instance_release(void);
/* The index of the best usable device (discrete > integrated > virtual > cpu), or -1. */
int vk_pick_best(const vk_physical *devs, uint32_t count);
/* 1 when KILN_VK_MIN_LIMITS asks to pretend the device has only Vulkan's minimums. */
int vk_min_limits_mode(void);
/* Registers an open device (open = 1) or forgets it: open devices finish their work at exit. */
struct vk_dev;
void vk_track_device(struct vk_dev *d, int open);
/* Validation layer messages seen so far (KILN_VK_VALIDATION=fail), and the first one. */
int vk_validation_failures(const char **first);

/* ---- memory (vk_memory.c) ---- */

typedef enum vk_pool_kind { VK_POOL_DEVICE = 0, VK_POOL_UPLOAD, VK_POOL_READBACK, VK_POOLS } vk_pool_kind;

typedef struct vk_range {
    VkDeviceSize begin, end;
} vk_range;

typedef struct vk_block {
    VkDeviceMemory memory;
    VkBuffer buffer;
    VkDeviceSize size;
    void *mapped; /* persistently mapped when host-visible, else NULL */
    uint32_t id;  /* unique for the device's lifetime: keys descriptor sets and hazards */
    int pool;     /* vk_pool_kind */
    int dedicated;
    vk_range *free_ranges; /* sorted, coalesced */
    int n_free, cap_free;
    struct vk_block *next;
} vk_block;

struct kiln_buf {
    vk_block *block;
    VkDeviceSize offset; /* in the block */
    VkDeviceSize size;   /* bytes requested */
    VkDeviceSize span;   /* bytes reserved */
};

typedef struct vk_pool {
    uint32_t type_index; /* memory type */
    int host_visible, coherent;
    vk_block *blocks;
} vk_pool;

/* ---- command recording (vk_commands.c) ---- */

typedef struct vk_batch {
    VkCommandBuffer cmd;
    VkFence fence;
    int state; /* VK_BATCH_* */
    uint32_t n_commands;
    VkDeviceSize staged_bytes;
    kiln_buf **frees; /* released when the batch has completed */
    int n_frees, cap_frees;
    VkDescriptorPool *dpools; /* descriptor sets of this batch's dispatches, reset on completion */
    int n_dpools, cur_dpool;
    VkBufferView *views; /* texel views of this batch's dispatches, destroyed on completion */
    int n_views, cap_views;
    VkQueryPool queries; /* KILN_VK_PROFILE: two timestamps per dispatch */
    uint32_t n_queries;
    const char **query_names;
} vk_batch;
enum { VK_BATCH_IDLE = 0, VK_BATCH_RECORDING, VK_BATCH_SUBMITTED };

/* A byte range touched since the last barrier: the hazard tracker's entry. */
typedef struct vk_access {
    uint32_t block;
    VkDeviceSize begin, end;
    int write;
} vk_access;
#define VK_MAX_PENDING 64

/* ---- pipelines (vk_pipeline.c) ---- */

typedef struct vk_pipeline {
    vk_shader_id shader;
    uint32_t spec[VK_MAX_SPEC];
    int n_spec, n_bindings;
    uint32_t texel_mask;
    VkPipeline handle;
} vk_pipeline;

/* A pipeline layout: n bindings, storage buffers except those in texel_mask, which are
 * uniform texel buffers (RGBA32F views), and the 128-byte push-constant range. */
typedef struct vk_layout {
    int n;
    uint32_t texel_mask;
    VkDescriptorSetLayout set;
    VkPipelineLayout pipe;
} vk_layout;
#define VK_MAX_LAYOUTS 16

typedef struct vk_kernel_time {
    const char *name;
    uint64_t count;
    double ms;
} vk_kernel_time;

typedef enum vk_class { VK_CLASS_GPU = 0, VK_CLASS_CPU } vk_class;

/* ---- the device ---- */

typedef struct vk_dev {
    kiln_backend table; /* the backend table with this device's limits filled in */
    char name[640];
    VkInstance instance;
    vk_physical phys;
    vk_caps caps;
    vk_class dclass;
    char gemm_force[16]; /* a GEMM variant forced through kiln_set_gemm_variant, or "" */
    VkDevice device;
    VkQueue queue;
    int unified; /* host-visible device-local memory is used directly */

    /* memory */
    vk_pool pools[VK_POOLS];
    VkDeviceSize block_size;     /* standard block; larger requests get a dedicated block */
    VkDeviceSize max_operand_bytes; /* the most one binding addresses, from any offset */
    VkDeviceSize heap_budget;    /* bytes kiln allows itself in the device heap */
    VkDeviceSize bytes_reserved; /* in device blocks */
    uint32_t n_allocations, next_block_id;
    vk_block *dummy_block; /* bound for absent operands: VK_DUMMY_SLOTS slots */
    uint32_t dummy_next;

    /* commands */
    VkCommandPool cmd_pool;
    vk_batch ring[VK_RING];
    int cur; /* ring index of the batch being recorded */
    vk_access pending[VK_MAX_PENDING];
    int n_pending;
    int lost; /* a device-lost or failed submission: every call fails */

    /* pipelines */
    VkPipelineCache pcache;
    char pcache_path[512];
    int pcache_dirty;
    vk_layout layouts[VK_MAX_LAYOUTS];
    int n_layouts;
    vk_pipeline *pipelines;
    int n_pipelines, cap_pipelines;

    /* profiling */
    int profile;
    vk_kernel_time *times;
    int n_times, cap_times;
} vk_dev;

/* Ends the device's Vulkan life (vk_backend.c); the struct remains for later frees. */
void vk_teardown(vk_dev *d);
/* At process exit: forgets the device without calling Vulkan (see finish_at_exit). */
void vk_abandon(vk_dev *d);
/* 1 when a Vulkan layer was asked for (KILN_VK_VALIDATION or VK_INSTANCE_LAYERS). */
int vk_layers_requested(void);
/* Writes the pipeline cache file when pipelines were added (vk_pipeline.c). */
void vk_pipeline_cache_save(vk_dev *d);

/* device (vk_device.c) */
kiln_status vk_device_create(vk_dev *d, VkInstance inst, const vk_physical *phys);
void vk_device_destroy(vk_dev *d);

/* memory */
kiln_status vk_memory_init(vk_dev *d);
/* The device memory kiln allows itself: the heap's size, but the host's RAM on a CPU device
 * whose memory is the host's (`unified`), and at most KILN_VK_HEAP_BUDGET. */
/* The device's memory for kiln_device_memory (kiln/context.h). */
kiln_status vk_memory_info(void *dev, kiln_memory_info *out);
kiln_status vk_memory_budget(const vk_physical *p, VkDeviceSize heap, int unified, VkDeviceSize *budget);
void vk_memory_destroy(vk_dev *d);
kiln_status vk_buf_alloc(vk_dev *d, vk_pool_kind pool, size_t bytes, kiln_buf **out);
/* Frees at once when no recorded or running work can use the buffer, else when it completes. */
void vk_buf_release(vk_dev *d, kiln_buf *buf);
/* Returns memory to its block immediately (the GPU must be done with it). */
void vk_buf_destroy_now(vk_dev *d, kiln_buf *buf);
kiln_status vk_alloc(void *dev, size_t bytes, kiln_buf **out);
void vk_free(void *dev, kiln_buf *buf);
kiln_status vk_upload(void *dev, kiln_ref dst, const void *src, size_t bytes);
/* Records vkCmdFillBuffer of `bytes` (a multiple of 4, at a 4-byte aligned offset) with a
 * repeated 32-bit word. */
kiln_status vk_fill_words(vk_dev *d, kiln_ref dst, VkDeviceSize bytes, uint32_t word);
kiln_status vk_download(void *dev, kiln_ref src, void *dst, size_t bytes);

/* commands */
kiln_status vk_commands_init(vk_dev *d);
void vk_commands_destroy(vk_dev *d);
/* The command buffer being recorded (begun on first use). */
kiln_status vk_cmd(vk_dev *d, VkCommandBuffer *out);
/* Declares that the next command touches [off, off+bytes) of `block`; records a barrier
 * first when that conflicts with an earlier command since the last barrier. Call once per
 * operand, then vk_hazard_commit() before recording the command. */
typedef struct vk_hazard_set {
    vk_access acc[VK_MAX_OPERANDS + 1];
    int n;
} vk_hazard_set;
void vk_hazard_add(vk_hazard_set *h, const vk_block *block, VkDeviceSize off, VkDeviceSize bytes,
                   int write);
void vk_hazard_commit(vk_dev *d, VkCommandBuffer cmd, const vk_hazard_set *h);
/* One more command was recorded: submits early when the batch has grown large. */
kiln_status vk_command_done(vk_dev *d);
/* Submits the recorded batch (if any); waits for all work when `wait`. */
kiln_status vk_flush(vk_dev *d, int wait);
kiln_status vk_sync(void *dev);
/* 1 when nothing is recorded or running. */
int vk_idle(vk_dev *d);
/* Adds a buffer to the release list of the batch being recorded. */
kiln_status vk_defer_free(vk_dev *d, kiln_buf *buf);
/* The status every entry point returns first: device lost, validation failures. */
kiln_status vk_health(vk_dev *d);
kiln_status vk_result(VkResult r, const char *what);

/* pipelines */
kiln_status vk_pipelines_init(vk_dev *d);
void vk_pipelines_destroy(vk_dev *d);
/* A descriptor set of a layout from the pools of the batch being recorded. */
kiln_status vk_batch_dset(vk_dev *d, VkDescriptorSetLayout layout, VkDescriptorSet *out);
/* Keeps a buffer view alive until the batch being recorded has completed. */
kiln_status vk_batch_view(vk_dev *d, VkBufferView view);

/* One dispatch. The push struct starts with one uint32 element offset per operand, which
 * vk_dispatch fills in (0xffffffff for an absent operand); the rest is the caller's. */
typedef struct vk_operand {
    kiln_ref ref;
    size_t bytes;   /* extent touched, from ref.off (0 for an operand the kernel skips) */
    uint32_t elem;  /* element size used to express the offset (4, or 2 for f16; 16 for a texel) */
    int write;
    int texel; /* bound as a uniform texel buffer (read-only): VK_TEXEL_F32, _F16 or _U32 */
} vk_operand;

typedef struct vk_launch {
    vk_shader_id shader;
    uint32_t spec[VK_MAX_SPEC]; /* constant_id i = spec[i] */
    int n_spec;
    vk_operand ops[VK_MAX_OPERANDS];
    int n_ops;  /* the kernel's <KERNEL>_OPS: VK_OPS(push block) */
    void *push; /* at least n_ops words */
    uint32_t push_bytes;
    uint32_t groups[3];
} vk_launch;
/* The binding of `operand` of the module `module`, as core/kernel_slots.def declares it
 * (checked against the module's GLSL at configure time): l.ops[VK_OP(axpby, x)]. */
#define VK_OP(module, operand) KILN_VK_OP_##module##_##operand
/* The operand count of a launch with push block p: the length of its off[] (push.h). */
#define VK_OPS(p) ((int)(sizeof((p).off) / sizeof((p).off[0])))
/* Records the launch; KILN_ERR_ARGUMENT, naming the shader, when its operands differ from
 * what the shader binds (vk_shader_check_launch). */
kiln_status vk_dispatch(vk_dev *d, vk_launch *l);
/* A launch over `items` work items, one per invocation of a 1-D workgroup whose size is
 * specialization constant 0 (vk_flat_wg). */
kiln_status vk_run_flat(vk_dev *d, vk_launch *l, uint64_t items);
/* Splits a 1-D count of workgroups into x*y within maxComputeWorkGroupCount; shaders
 * recover the linear id with kiln_group_id() (shaders/common.glsl) and skip extra groups. */
void vk_grid_1d(const vk_dev *d, uint64_t groups, uint32_t out[3]);

/* A temporary device buffer for a multi-pass kernel, released once recorded work is done. */
kiln_status vk_scratch(vk_dev *d, size_t bytes, kiln_ref *out);

/* profiling */
kiln_status vk_profile_begin(vk_dev *d, vk_batch *b, VkCommandBuffer cmd, const char *name);
void vk_profile_end(vk_dev *d, vk_batch *b, VkCommandBuffer cmd);
void vk_profile_collect(vk_dev *d, vk_batch *b);
void vk_profile_report(vk_dev *d);

/* helpers shared by the kernel families */
static inline vk_dev *vk_of(void *dev) { return (vk_dev *)dev; }
static inline int vk_has(kiln_ref r) { return r.buf != NULL; }
static inline uint32_t vk_u32(int64_t v) { return (uint32_t)v; }
static inline uint32_t vk_div_up(uint64_t a, uint64_t b) { return (uint32_t)((a + b - 1) / b); }
/* Operand shorthands: an input or an output of `count` elements of `elem` bytes. */
vk_operand vk_in(kiln_ref r, int64_t count, uint32_t elem);
vk_operand vk_out(kiln_ref r, int64_t count, uint32_t elem);
/* A read-only operand of `count` RGBA32F texels, read with texelFetch; or of RGBA16F
 * texels (four halves, 8 bytes), which texelFetch widens to f32 exactly (caps.texel_f16). */
enum { VK_TEXEL_F32 = 1, VK_TEXEL_F16 = 2, VK_TEXEL_U32 = 3 };
vk_operand vk_texels(kiln_ref r, int64_t count);
vk_operand vk_texels_f16(kiln_ref r, int64_t count);
/* A read-only operand of `count` RGBA32UI texels (16 bytes as 4 words: usamplerBuffer). */
vk_operand vk_texels_u32(kiln_ref r, int64_t count);

/* the kernels: vk_<slot> for each slot of core/kernel_slots.def, in its family's
 * vk_<family>.c (the flat kernels' slots in vk_split.c, the gemm slot in vk_gemm_f16_out.c) */
#define KILN_SLOT(family, slot, args, output, output_dtype) kiln_status vk_##slot(void *dev, const args *a);
#include "core/kernel_slots.def"
int vk_gemm_variants(void *dev, const char **names, int cap);
/* The GEMM for at most KILN_ABI_GEMV_ROWS rows of C (vk_gemm_gemv.c): whether it takes these
 * arguments, and the product (ea, eb: bytes per element of A and B) */
int vk_gemv_applies(const vk_dev *d, const kiln_gemm_args *a);
kiln_status vk_gemm_gemv(vk_dev *d, const kiln_gemm_args *a, uint32_t ea, uint32_t eb);
kiln_status vk_set_gemm_variant(void *dev, const char *name);
/* qmatmul (vk_quant.c) takes the int8 path where caps.int_dot, else f32. qmatmul on
 * int8-rounded activations (vk_quant_dot.c), and the backend's qmatmul_rounds_x: whether
 * vk_qmatmul takes that path on this device */
kiln_status vk_qmatmul_int8(vk_dev *d, const kiln_qmatmul_args *a);
/* qmatmul for at most KILN_ABI_GEMV_ROWS rows of x in Q8_0 or Q4_0 (vk_quant_gemv.c): whether
 * it takes these arguments, and the product */
int vk_qgemv_applies(const vk_dev *d, const kiln_qmatmul_args *a);
kiln_status vk_qgemv(vk_dev *d, const kiln_qmatmul_args *a);
int vk_qmatmul_rounds_x(void *dev);
/* The mapping of both qmatmul product kernels onto l (vk_quant.c): WG invocations
 * (specialization constant 0), T of them per weight row (constant 1, a power of two <= WG),
 * the weights' format (constant 2, so that a pipeline holds one format's decoding), and
 * the grid of ceil(n / (WG / T)) x ceil(m / 8) workgroups. */
void vk_qmatmul_map(const vk_dev *d, const kiln_qmatmul_args *a, vk_launch *l);

/* One dispatch of a flat kernel whose operands fit one binding each: the slots in
 * vk_split.c run them on pieces (vk_<family>.c). */
kiln_status vk_fill_piece(void *dev, const kiln_fill_args *a);
kiln_status vk_cast_piece(void *dev, const kiln_cast_args *a);
kiln_status vk_axpby_piece(void *dev, const kiln_axpby_args *a);
kiln_status vk_binary_piece(void *dev, const kiln_binary_args *a);
kiln_status vk_act_fwd_piece(void *dev, const kiln_act_args *a);
kiln_status vk_act_bwd_piece(void *dev, const kiln_act_args *a);
kiln_status vk_check_finite_piece(void *dev, const kiln_finite_args *a);
kiln_status vk_adam_piece(void *dev, const kiln_adam_args *a);

/* x (f32 or f16) viewed as [outer, segs, inner]; out[s] (f32) = scale * sum (or += when
 * accumulate) of each element, its square or p log p (kind KILN_ABI_VK_REDUCE_*) (vk_reduce.c). */
kiln_status vk_reduce_segmented(vk_dev *d, kiln_ref x, kiln_dtype dtype, kiln_ref out, int64_t outer, int64_t segs,
                                int64_t inner, uint32_t kind, float scale, int accumulate);
/* The sum (scale * sum x, overwriting out[0] or adding to it) or the sum of squares of n
 * elements of x (vk_reduce.c). */
kiln_status vk_reduce_sum(vk_dev *d, kiln_ref x, kiln_dtype dtype, kiln_ref out, int64_t n, int square, float scale,
                          int accumulate);

/* Elements per piece when the widest operand has `widest` bytes per element: a multiple of
 * `granule` that fits one binding. */
int64_t vk_piece_elems(const vk_dev *d, uint32_t widest, int64_t granule);
/* Rows per piece when each row is `row_bytes`: all `count` when they fit one binding;
 * KILN_ERR_UNSUPPORTED when one row does not. */
kiln_status vk_rows_per_piece(const vk_dev *d, int64_t count, int64_t row_bytes, int64_t *rows);
/* r moved `bytes` further into its buffer (an absent operand stays absent). */
static inline kiln_ref vk_ref_at(kiln_ref r, int64_t bytes) {
    if (r.buf) r.off += (size_t)bytes;
    return r;
}

/* One product whose operands fit one binding each (vk_gemm.c). The gemm slot (vk_gemm in
 * vk_gemm_f16_out.c) is vk_gemm_split, with an f16 C through an f32 scratch. */
kiln_status vk_gemm_piece(void *dev, const kiln_gemm_args *a);
/* vk_gemm_piece on operands of any size (vk_gemm_split.c): a product whose operands do not fit
 * one binding, or on a CPU-class device whose packed panels would not, runs as several
 * products on sub-blocks. */
kiln_status vk_gemm_split(vk_dev *d, const kiln_gemm_args *a);
/* The bytes each operand of a product spans: C, A and B (0 for A and B when k is 0). */
void vk_gemm_spans(const kiln_gemm_args *a, int64_t bytes[3]);
/* Whether vk_gemm_piece runs this product as one: its operands fit one binding each and, on a
 * CPU-class device, its packed panels fit too (else the slow tiled kernel would run). */
int vk_gemm_fits(const vk_dev *d, const kiln_gemm_args *a);

/* The cooperative-matrix GEMM (vk_gemm_coopmat.c): whether it takes these arguments here. */
int vk_gemm_coopmat_applies(const vk_dev *d, const kiln_gemm_args *a);
kiln_status vk_gemm_coopmat(vk_dev *d, const kiln_gemm_args *a);

/* Workgroup size for row-wise kernels (one row per workgroup), by device class. */
uint32_t vk_row_wg(const vk_dev *d, int64_t cols);
/* Shape of column-sum workgroups (sum_rows, norm_bwd_params): wx columns by wy row lanes. */
void vk_column_wg(const vk_dev *d, uint32_t *wx, uint32_t *wy);
/* Workgroup size for flat elementwise kernels. */
uint32_t vk_flat_wg(const vk_dev *d);
/* KILN_OK when the device can take f16 data (16-bit storage), else that error. Every
 * kernel given f16 data checks it, so a device without f16 (supports_f16 = 0) refuses f16
 * everywhere, also where a kernel's packed-word f16 path would not need the feature. */
kiln_status vk_require_f16(const vk_dev *d, const char *kernel);
/* The build of `kernel` for this device and data type (its builds in
 * core/kernel_slots.def, kiln_vk_variants): its "_shared" build where the device lacks subgroup arithmetic and the
 * kernel has one; its "_f16" build for f16 data, which needs 16-bit storage: without it
 * the kernel fails with KILN_ERR_UNSUPPORTED and a line naming the device (the backend's
 * supports_f16 says so up front). KILN_ERR_DTYPE for a dtype other than f32 and f16
 * (vk_shaders.c). */
kiln_status vk_variant(const vk_dev *d, vk_shader_id kernel, kiln_dtype dtype, vk_shader_id *out);
/* Bytes per element of a kernel's data operands (f32, f16 or i32). */
static inline uint32_t vk_elem(kiln_dtype t) { return t == KILN_F16 ? 2 : 4; }

#endif
