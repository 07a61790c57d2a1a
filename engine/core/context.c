/* Contexts: opening a backend by name, the per-step arena, step-owned host memory. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"

#define ARENA_MIN_BLOCK ((size_t)64 << 20)

static const char *const g_compiled[] = {
    "cpu",
#ifdef KILN_HAVE_VULKAN
    "vulkan",
#endif
#ifdef KILN_HAVE_OPENCL
    "opencl",
#endif
    NULL};

const char *const *kiln_backends_compiled(void) { return g_compiled; }

/* Splits "vulkan:2" into the backend name and device index (-1 when absent). */
static kiln_status parse_name(const char *name, char *backend, size_t size, int *index) {
    const char *colon = strchr(name, ':');
    size_t len = colon ? (size_t)(colon - name) : strlen(name);
    if (len == 0 || len >= size)
        return kiln_set_error(KILN_ERR_NO_BACKEND, "unknown backend '%s' (try cpu, vulkan, opencl or auto)", name);
    memcpy(backend, name, len);
    backend[len] = 0;
    *index = -1;
    if (colon) {
        char *end;
        long v = strtol(colon + 1, &end, 10);
        if (end == colon + 1 || *end || v < 0 || v > 1000)
            return kiln_set_error(KILN_ERR_NO_DEVICE,
                                  "bad device index in '%s': expected a number like %s:0", name,
                                  backend);
        *index = (int)v;
    }
    return KILN_OK;
}

static kiln_status open_backend(const char *backend, int index, const kiln_backend **table,
                                void **dev) {
    if (!strcmp(backend, "cpu")) return kiln_cpu_open(index, table, dev);
    if (!strcmp(backend, "vulkan")) {
#ifdef KILN_HAVE_VULKAN
        return kiln_vulkan_open(index, table, dev);
#else
        return kiln_set_error(KILN_ERR_NO_BACKEND,
                              "this kiln was built without Vulkan (configure with -DKILN_VULKAN=ON "
                              "and the Vulkan SDK installed)");
#endif
    }
    if (!strcmp(backend, "opencl")) {
#ifdef KILN_HAVE_OPENCL
        return kiln_opencl_open(index, table, dev);
#else
        return kiln_set_error(KILN_ERR_NO_BACKEND,
                              "this kiln was built without OpenCL (configure with -DKILN_OPENCL=ON "
                              "and the OpenCL headers and ICD loader installed)");
#endif
    }
    if (!strcmp(backend, "auto")) {
        if (index >= 0)
            return kiln_set_error(KILN_ERR_NO_DEVICE, "'auto' takes no device index");
        /* The first real GPU wins. A CPU-type device (lavapipe, PoCL) runs on the same
         * cores as the native CPU backend, only slower, so it is closed again. */
        static const char *const order[] = {"vulkan", "opencl"};
        for (int i = 0; i < 2; i++) {
            if (open_backend(order[i], -1, table, dev) != KILN_OK) continue;
            if (!(*table)->device_is_cpu || !(*table)->device_is_cpu(*dev)) return KILN_OK;
            (*table)->close(*dev);
        }
        kiln_clear_error();
        return kiln_cpu_open(-1, table, dev);
    }
    return kiln_set_error(KILN_ERR_NO_BACKEND,
                          "unknown backend '%s' (try cpu, vulkan, opencl or auto)", backend);
}

kiln_status kiln_device_alloc(kiln_ctx *ctx, size_t bytes, kiln_buf **out) {
    if (kiln_fault_armed && kiln_fault_alloc(ctx->be->name, bytes)) return KILN_ERR_MEMORY;
    return ctx->be->alloc(ctx->dev, bytes, out);
}

kiln_status kiln_open(const char *name, kiln_ctx **out) {
    if (!out) return kiln_set_error(KILN_ERR_ARGUMENT, "kiln_open: out is NULL");
    kiln_fault_init();
    *out = NULL;
    if (!name) return kiln_set_error(KILN_ERR_ARGUMENT, "kiln_open: backend name is NULL");
    char backend[32];
    int index;
    kiln_status s = parse_name(name, backend, sizeof backend, &index);
    if (s) return s;
    kiln_ctx *ctx = calloc(1, sizeof *ctx);
    if (!ctx) return kiln_set_error(KILN_ERR_MEMORY, "kiln_open: out of host memory");
    s = open_backend(backend, index, &ctx->be, &ctx->dev);
    if (s) {
        free(ctx);
        return s;
    }
    ctx->grad_enabled = 1;
    ctx->training = 1;
    ctx->seed = 1;
    ctx->err_flag = kiln_tensor_new(ctx, KILN_I32, 0, NULL);
    if (!ctx->err_flag) {
        kiln_close(ctx);
        return kiln_error_status();
    }
    *out = ctx;
    return KILN_OK;
}

kiln_status kiln_owned_add(kiln_ctx *ctx, kiln_tensor *t) {
    if (ctx->n_persistent == ctx->cap_owned) {
        int cap = ctx->cap_owned ? 2 * ctx->cap_owned : 64;
        kiln_tensor **grown = realloc(ctx->owned, (size_t)cap * sizeof *grown);
        if (!grown) return kiln_set_error(KILN_ERR_MEMORY, "out of host memory");
        ctx->owned = grown;
        ctx->cap_owned = cap;
    }
    ctx->owned[ctx->n_persistent++] = t;
    return KILN_OK;
}

/* Searched from the newest: gradients, optimizer state and a step's scratch tensors are
 * mostly freed soon after they are made, and a model of thousands of tensors freed front to
 * back costs milliseconds. */
void kiln_owned_remove(kiln_ctx *ctx, kiln_tensor *t) {
    for (int i = ctx->n_persistent - 1; i >= 0; i--)
        if (ctx->owned[i] == t) {
            ctx->owned[i] = ctx->owned[--ctx->n_persistent];
            return;
        }
}

/* The persistent tensors the caller left: each one's storage and struct. A gradient is in
 * the list itself, so none is freed through its tensor (which would free it twice). */
static void free_owned(kiln_ctx *ctx) {
    for (int i = 0; i < ctx->n_persistent; i++) {
        ctx->be->free(ctx->dev, ctx->owned[i]->buf);
        free(ctx->owned[i]);
    }
    free(ctx->owned);
    ctx->owned = NULL;
    ctx->n_persistent = ctx->cap_owned = 0;
    ctx->persistent_bytes = 0;
}

void kiln_close(kiln_ctx *ctx) {
    if (!ctx) return;
    kiln_probe_release(ctx);
    if (ctx->be->sync) ctx->be->sync(ctx->dev);
    kiln_step_reset(ctx);
    kiln_tensor_free(ctx->err_flag);
    free_owned(ctx);
    for (int i = 0; i < ctx->n_blocks; i++) ctx->be->free(ctx->dev, ctx->blocks[i].buf);
    free(ctx->blocks);
    free(ctx->step_allocs);
    free(ctx->tape);
    ctx->be->close(ctx->dev);
    free(ctx);
    kiln_fault_report();
}

const char *kiln_backend_name(const kiln_ctx *ctx) { return ctx ? ctx->be->name : "?"; }
const char *kiln_device_name(const kiln_ctx *ctx) {
    return ctx ? ctx->be->device_name(ctx->dev) : "?";
}

int kiln_supports_dtype(const kiln_ctx *ctx, kiln_dtype dtype) {
    if (!ctx) return 0;
    switch (dtype) {
    case KILN_F32:
    case KILN_I32: return 1;
    case KILN_F16: return !ctx->be->supports_f16 || ctx->be->supports_f16(ctx->dev);
    }
    return 0;
}

kiln_status kiln_list_devices(const char *backend, void *out_file) {
    if (!backend || !out_file) return kiln_set_error(KILN_ERR_ARGUMENT, "kiln_list_devices: NULL argument");
    if (!strcmp(backend, "cpu")) return kiln_cpu_list(out_file);
#ifdef KILN_HAVE_VULKAN
    if (!strcmp(backend, "vulkan")) return kiln_vulkan_list(out_file);
#endif
#ifdef KILN_HAVE_OPENCL
    if (!strcmp(backend, "opencl")) return kiln_opencl_list(out_file);
#endif
    return kiln_set_error(KILN_ERR_NO_BACKEND, "backend '%s' is not compiled into this kiln", backend);
}

kiln_status kiln_sync(kiln_ctx *ctx) {
    if (!ctx) return kiln_set_error(KILN_ERR_ARGUMENT, "kiln_sync: ctx is NULL");
    return ctx->be->sync(ctx->dev);
}

void kiln_set_grad_enabled(kiln_ctx *ctx, int enabled) { ctx->grad_enabled = enabled != 0; }
int kiln_grad_enabled(const kiln_ctx *ctx) { return ctx->grad_enabled; }
void kiln_set_training(kiln_ctx *ctx, int training) { ctx->training = training != 0; }
int kiln_training(const kiln_ctx *ctx) { return ctx->training; }
void kiln_set_seed(kiln_ctx *ctx, uint64_t seed) { ctx->seed = seed; }
uint64_t kiln_seed(const kiln_ctx *ctx) { return ctx->seed; }
uint64_t kiln_rng_stream(const kiln_ctx *ctx) { return ctx->rng_stream; }
void kiln_set_rng_stream(kiln_ctx *ctx, uint64_t stream) { ctx->rng_stream = stream; }
size_t kiln_memory_persistent(const kiln_ctx *ctx) { return ctx->persistent_bytes; }

size_t kiln_memory_arena(const kiln_ctx *ctx) {
    size_t total = 0;
    for (int i = 0; i < ctx->n_blocks; i++) total += ctx->blocks[i].size;
    return total;
}

size_t kiln_memory_arena_peak(const kiln_ctx *ctx) { return ctx->arena_peak; }

void *kiln_step_malloc(kiln_ctx *ctx, size_t bytes) {
    if (ctx->n_step_allocs == ctx->cap_step_allocs) {
        int cap = ctx->cap_step_allocs ? 2 * ctx->cap_step_allocs : 256;
        void **grown = realloc(ctx->step_allocs, (size_t)cap * sizeof *grown);
        if (!grown) return kiln_fail(KILN_ERR_MEMORY, "out of host memory");
        ctx->step_allocs = grown;
        ctx->cap_step_allocs = cap;
    }
    void *p = calloc(1, bytes ? bytes : 1);
    if (!p) return kiln_fail(KILN_ERR_MEMORY, "out of host memory");
    ctx->step_allocs[ctx->n_step_allocs++] = p;
    return p;
}

static size_t align_up(size_t v, size_t a) { return (v + a - 1) / a * a; }

kiln_status kiln_arena_alloc(kiln_ctx *ctx, size_t bytes, kiln_buf **buf, size_t *offset) {
    size_t align = ctx->be->offset_alignment ? ctx->be->offset_alignment : 256;
    bytes = align_up(bytes ? bytes : 1, align);
    for (int i = 0; i < ctx->n_blocks; i++) {
        kiln_arena_block *b = &ctx->blocks[i];
        size_t at = align_up(b->used, align);
        if (at + bytes <= b->size) {
            b->used = at + bytes;
            *buf = b->buf;
            *offset = at;
            return KILN_OK;
        }
    }
    size_t size = bytes > ARENA_MIN_BLOCK ? bytes : ARENA_MIN_BLOCK;
    if (ctx->be->max_buffer_bytes && size > ctx->be->max_buffer_bytes) {
        if (bytes > ctx->be->max_buffer_bytes)
            return kiln_set_error(KILN_ERR_MEMORY,
                                  "a tensor of %zu bytes exceeds the device's largest buffer "
                                  "(%zu bytes)", bytes, ctx->be->max_buffer_bytes);
        size = ctx->be->max_buffer_bytes;
    }
    if (ctx->n_blocks == ctx->cap_blocks) {
        int cap = ctx->cap_blocks ? 2 * ctx->cap_blocks : 8;
        kiln_arena_block *grown = realloc(ctx->blocks, (size_t)cap * sizeof *grown);
        if (!grown) return kiln_set_error(KILN_ERR_MEMORY, "out of host memory");
        ctx->blocks = grown;
        ctx->cap_blocks = cap;
    }
    kiln_buf *nb;
    kiln_status s = kiln_device_alloc(ctx, size, &nb);
    if (s) return s;
    kiln_arena_block *b = &ctx->blocks[ctx->n_blocks++];
    b->buf = nb;
    b->size = size;
    b->used = bytes;
    *buf = nb;
    *offset = 0;
    return KILN_OK;
}

void kiln_step_reset(kiln_ctx *ctx) {
    if (!ctx) return;
    /* Persistent tensors keep their gradient; an arena gradient pointer on one would dangle. */
    size_t used = 0;
    for (int i = 0; i < ctx->n_blocks; i++) used += ctx->blocks[i].used;
    if (used > ctx->arena_peak) ctx->arena_peak = used;
    for (int i = 0; i < ctx->n_step_allocs; i++) free(ctx->step_allocs[i]);
    ctx->n_step_allocs = 0;
    ctx->tape_len = 0;
    /* Several blocks mean the step outgrew the first: merge them into one block the size of
     * the peak, so later steps bump-allocate from a single buffer. */
    if (ctx->n_blocks > 1 && ctx->be->sync(ctx->dev) == KILN_OK) {
        size_t want = ctx->arena_peak + ctx->arena_peak / 8;
        if (!ctx->be->max_buffer_bytes || want <= ctx->be->max_buffer_bytes) {
            for (int i = 0; i < ctx->n_blocks; i++) ctx->be->free(ctx->dev, ctx->blocks[i].buf);
            ctx->n_blocks = 0;
            kiln_buf *nb;
            if (kiln_device_alloc(ctx, want, &nb) == KILN_OK) {
                ctx->blocks[0].buf = nb;
                ctx->blocks[0].size = want;
                ctx->n_blocks = 1;
            }
        }
    }
    for (int i = 0; i < ctx->n_blocks; i++) ctx->blocks[i].used = 0;
}
