/* Engine-private declarations shared by core/, ops/ and the backends. */
#ifndef KILN_CORE_INTERNAL_H
#define KILN_CORE_INTERNAL_H

#include <stdarg.h>

#include "core/backend.h"
#include "core/fault.h"
#include "kiln/probe.h" /* kiln_clock_wall */

#if defined(__GNUC__)
#define KILN_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define KILN_PRINTF(f, a)
#endif

/* Sets this thread's error message and returns `status`, so failures read
 * `return kiln_set_error(KILN_ERR_SHAPE, "matmul: ...", ...);`. */
kiln_status kiln_set_error(kiln_status status, const char *fmt, ...) KILN_PRINTF(2, 3);
/* The same, for functions that return a pointer: sets the error, returns NULL. */
void *kiln_fail(kiln_status status, const char *fmt, ...) KILN_PRINTF(2, 3);

/* ---- the tape ---- */
struct kiln_tape_rec;
typedef kiln_status (*kiln_backward_fn)(struct kiln_tape_rec *rec);

#define KILN_TAPE_SAVED 4
typedef struct kiln_tape_rec {
    kiln_backward_fn backward;
    kiln_tensor *out;
    kiln_tensor **in; /* n_in inputs (host memory owned by the step) */
    int n_in;
    kiln_tensor *saved[KILN_TAPE_SAVED]; /* tensors the backward needs besides in/out */
    float f[8];       /* op parameters */
    int64_t i[8];
} kiln_tape_rec;

/* ---- the per-step arena: bump allocation over a few large device buffers ---- */
typedef struct kiln_arena_block {
    kiln_buf *buf;
    size_t size, used;
} kiln_arena_block;

struct kiln_ctx {
    const kiln_backend *be;
    void *dev;
    int grad_enabled, training;
    uint64_t seed, rng_stream;

    kiln_arena_block *blocks;
    int n_blocks, cap_blocks;
    size_t arena_peak; /* bytes used in the largest step so far */

    /* host memory owned by the current step (tensor structs, tape input arrays) */
    void **step_allocs;
    int n_step_allocs, cap_step_allocs;

    kiln_tape_rec *tape;
    int tape_len, tape_cap;

    size_t persistent_bytes;
    int n_persistent; /* live persistent tensors, for leak checks */
    /* The live persistent tensors that own their storage, so that kiln_close frees the ones
     * the caller did not (their structs are the caller's heap memory, not the step's). */
    kiln_tensor **owned;
    int cap_owned;

    kiln_tensor *err_flag; /* i32 scalar set by device kernels on a bad index */

    struct kiln_probe_state *probe; /* the running timer, the driver string (core/probe.c) */
};

/* Bump-allocates `bytes` of device memory that lives until kiln_step_reset (context.c). */
kiln_status kiln_arena_alloc(kiln_ctx *ctx, size_t bytes, kiln_buf **buf, size_t *offset);

/* The context's list of live persistent tensors (ctx->owned, n_persistent of them): add
 * fails only when out of host memory; remove takes t out of it (context.c). */
kiln_status kiln_owned_add(kiln_ctx *ctx, kiln_tensor *t);
void kiln_owned_remove(kiln_ctx *ctx, kiln_tensor *t);

/* Host memory that lives until kiln_step_reset. */
void *kiln_step_malloc(kiln_ctx *ctx, size_t bytes);

/* n values at once, f16 -> f32 and f32 -> f16 (round to nearest even): the same bits as
 * kiln_f16_to_f32 / kiln_f32_to_f16, with the CPU's vector conversions where it has them
 * (dtype.c). */
void kiln_f16_to_f32_n(const uint16_t *src, float *dst, int64_t n);
void kiln_f32_to_f16_n(const float *src, uint16_t *dst, int64_t n);

/* A device reference to a tensor's first element. */
static inline kiln_ref kiln_ref_of(const kiln_tensor *t) {
    kiln_ref r = {0, 0};
    if (t) {
        r.buf = t->buf;
        r.off = t->offset;
    }
    return r;
}

/* Shape helpers. */
int64_t kiln_shape_numel(int ndim, const int64_t *shape);
/* "[2, 3, 4]" into buf (for messages). */
const char *kiln_shape_str(const kiln_tensor *t, char *buf, size_t size);

/* ---- helpers for ops ---- */

/* Returns 1 when every input is non-NULL. When one is NULL the op returns NULL: an earlier
 * call already set the message. */
int kiln_inputs_ok(int count, ...);

/* Dtype checks for ops (op_check.c), with messages that name the op and the operand.
 * kiln_check_float: t is f32 or f16 ("gelu: x must be f32 or f16, got i32").
 * kiln_check_same_dtype: b (NULL passes) has a's dtype; every floating operand of an op
 * shares one dtype, so mixed precision never happens silently inside an op
 * ("add: a is f16 but b is f32; convert one with kiln_cast"). Both return KILN_OK or
 * KILN_ERR_DTYPE with the message set. */
kiln_status kiln_check_float(const char *op, const kiln_tensor *t, const char *what);
kiln_status kiln_check_same_dtype(const char *op, const kiln_tensor *a, const char *a_name,
                                  const kiln_tensor *b, const char *b_name);

/* The output tensor of an op, in the arena. */
kiln_tensor *kiln_op_output(kiln_ctx *ctx, kiln_dtype dtype, int ndim, const int64_t *shape);

/* 1 when the op must be recorded: grad enabled and some input requires grad. */
int kiln_needs_tape(kiln_ctx *ctx, int count, kiln_tensor *const *inputs);

/* Records an op. Copies the inputs array. Marks `out` as requiring grad. Returns the
 * record so the caller can fill parameters and saved tensors, or NULL (error set). */
kiln_tape_rec *kiln_tape_push(kiln_ctx *ctx, kiln_backward_fn backward, kiln_tensor *out,
                              int n_in, kiln_tensor *const *inputs);

/* The gradient of t for a backward rule to accumulate into: allocated zero-filled on first
 * use (persistent for persistent tensors, in the arena otherwise; a view's gradient is the
 * matching view of its base's gradient). NULL when t does not require grad. */
kiln_tensor *kiln_grad_acc(kiln_tensor *t);

/* Checks the device error flag that kernels set on a bad index (reads it back: used on
 * paths that already sync). */
kiln_status kiln_check_device_errors(kiln_ctx *ctx);

/* Calls a backend kernel slot, failing cleanly when the backend lacks it (or when
 * KILN_FAULT injects a lost device, or a wrong result afterwards: core/fault.h). */
#define KILN_CALL(ctx, slot, args)                                                                      \
    ((kiln_fault_armed && kiln_fault_kernel((ctx)->be->name, #slot))                                     \
         ? KILN_ERR_DEVICE                                                                               \
     : !(ctx)->be->slot                                                                                  \
         ? kiln_set_error(KILN_ERR_UNSUPPORTED, "backend %s has no kernel " #slot, (ctx)->be->name)      \
     : kiln_fault_armed ? kiln_fault_result((ctx), #slot, (args), (ctx)->be->slot((ctx)->dev, (args))) \
                        : (ctx)->be->slot((ctx)->dev, (args)))

/* Allocates a device buffer through the backend (every allocation goes through here, so
 * that KILN_FAULT=oom@N can fail one). */
kiln_status kiln_device_alloc(kiln_ctx *ctx, size_t bytes, kiln_buf **out);

/* Ends a timer left running and frees the context's probe state (kiln_close). */
void kiln_probe_release(kiln_ctx *ctx);

/* Seconds of this process's CPU time (core/clock.c); the wall clock is public (probe.h). */
double kiln_clock_cpu(void);

/* Zero-fills a tensor on the device. */
kiln_status kiln_zero(kiln_tensor *t);

#endif
