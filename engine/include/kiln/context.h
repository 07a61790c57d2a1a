/* Contexts: one opened device, its memory, its tape and its per-step arena.
 *
 * Threads. A context and everything made from it (its tensors, tape, arena, optimizers and
 * loss scalers) belong to one thread at a time: calls on one context must not overlap; a
 * program that hands a context to another thread orders the hand-over itself (a mutex, a
 * join). Different contexts may be used from different threads at the same time, on the
 * same device or on different ones. kiln_open and kiln_close may be called from any thread
 * at any time (the backends guard their process-wide state: the Vulkan instance and its list
 * of open devices, the OpenCL program cache). kiln_error_message and kiln_error_status read
 * the calling thread's last error. The library starts its own threads only inside a call
 * (the CPU backend's OpenMP team) and none outlives it. */
#ifndef KILN_CONTEXT_H
#define KILN_CONTEXT_H

#include "kiln/types.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kiln_ctx kiln_ctx;

/* Opens a context by name:
 *   "cpu"        the reference backend (always present)
 *   "vulkan"     the best Vulkan device;  "vulkan:N"  device N of `kiln info`
 *   "opencl"     the best OpenCL device;  "opencl:N"  device N across all platforms
 *   "auto"       the best real GPU (Vulkan, then OpenCL), else "cpu": a CPU-type
 *                Vulkan/OpenCL device (lavapipe, PoCL) is never chosen by "auto"
 * Returns KILN_OK and sets *out, or an error (unknown name, missing driver, no such device). */
kiln_status kiln_open(const char *name, kiln_ctx **out);
/* Frees the context and everything it holds, the persistent tensors not yet freed
 * included (their storage and their structs): their pointers are invalid afterwards. */
void kiln_close(kiln_ctx *ctx);

/* Which backend ("cpu", "vulkan", "opencl") and device the context runs on. */
const char *kiln_backend_name(const kiln_ctx *ctx);
const char *kiln_device_name(const kiln_ctx *ctx);

/* 1 when tensors of `dtype` can live on the context's device. f32 and i32 always can; f16
 * needs 16-bit storage, which a few Vulkan devices lack (mixed precision then has to fall
 * back to fp32). Creating an f16 tensor where this is 0 fails with KILN_ERR_UNSUPPORTED. */
int kiln_supports_dtype(const kiln_ctx *ctx, kiln_dtype dtype);

/* Names of the backends compiled into this build, NULL-terminated. */
const char *const *kiln_backends_compiled(void);

/* Writes a human-readable listing of the devices of one backend ("cpu", "vulkan",
 * "opencl") to `out` (a FILE*). Returns KILN_ERR_NO_BACKEND when the backend is not
 * compiled in or its driver is missing, with a message saying which. */
kiln_status kiln_list_devices(const char *backend, void *out_file);

/* Waits until every recorded op has finished on the device. Reading a tensor syncs by
 * itself; this is for timing. */
kiln_status kiln_sync(kiln_ctx *ctx);

/* Ends a step: frees every tensor made by ops since the last reset (activations and their
 * gradients), and clears the tape. Persistent tensors (kiln_tensor_new) and their
 * gradients stay. */
void kiln_step_reset(kiln_ctx *ctx);

/* Turns tape recording on or off (off for evaluation and decoding). Default on. */
void kiln_set_grad_enabled(kiln_ctx *ctx, int enabled);
int kiln_grad_enabled(const kiln_ctx *ctx);

/* Training mode enables dropout. Default on. */
void kiln_set_training(kiln_ctx *ctx, int training);
int kiln_training(const kiln_ctx *ctx);

/* The seed of the counter-based RNG (see rng.h). Default 1. */
void kiln_set_seed(kiln_ctx *ctx, uint64_t seed);
uint64_t kiln_seed(const kiln_ctx *ctx);
/* The RNG stream counter: each dropout call takes the next stream. Saved and restored with
 * a checkpoint so a resumed run draws the same masks. */
uint64_t kiln_rng_stream(const kiln_ctx *ctx);
void kiln_set_rng_stream(kiln_ctx *ctx, uint64_t stream);

/* Bytes currently held on the device: persistent tensors and the arena's blocks. */
size_t kiln_memory_persistent(const kiln_ctx *ctx);
size_t kiln_memory_arena(const kiln_ctx *ctx);
/* The most arena bytes a single step has used so far (its activations, their gradients and
 * temporaries), as measured at each kiln_step_reset: what a step needs, where
 * kiln_memory_arena is what the arena holds (whole blocks, with headroom). */
size_t kiln_memory_arena_peak(const kiln_ctx *ctx);

/* A device's memory, in bytes: what it has and what kiln may use of it.
 *   cpu     total: the host's physical RAM; usable: that, or the process's cgroup memory
 *           limit (v1 or v2) where it is lower
 *   vulkan  total: the device-local heap kiln allocates from; usable: the budget kiln
 *           keeps there (the heap; three quarters of the host's RAM on a CPU device such
 *           as lavapipe, whose heap size is fixed; KILN_VK_HEAP_BUDGET), and no more than
 *           VK_EXT_memory_budget's heapBudget where a GPU has the extension
 *   opencl  total: CL_DEVICE_GLOBAL_MEM_SIZE; usable: that (or KILN_CL_MEM_LIMIT)
 * max_buffer is the largest single buffer (0: no limit below usable): OpenCL's
 * CL_DEVICE_MAX_MEM_ALLOC_SIZE, Vulkan's maxMemoryAllocationSize.
 * The environment variable KILN_MEMORY_LIMIT=BYTES lowers usable on every backend (to run
 * as on a smaller device, and for the tests of refusing what would not fit); a value that is
 * not a positive whole number of bytes is KILN_ERR_ARGUMENT. */
typedef struct kiln_memory_info {
    uint64_t total, usable, max_buffer;
} kiln_memory_info;
kiln_status kiln_device_memory(const kiln_ctx *ctx, kiln_memory_info *out);

#ifdef __cplusplus
}
#endif
#endif
