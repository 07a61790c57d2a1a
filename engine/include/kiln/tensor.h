/* Tensors: a dtype, up to 4 dims, contiguous storage at an offset in a device buffer.
 *
 * Two lifetimes:
 *  - persistent tensors (kiln_tensor_new): weights, optimizer state; freed by
 *    kiln_tensor_free, or by kiln_close with every one still alive;
 *  - step tensors: every op's output; they live in the context's arena until
 *    kiln_step_reset.
 * Views (kiln_reshape, kiln_view_rows) share their base's storage and cost nothing. */
#ifndef KILN_TENSOR_H
#define KILN_TENSOR_H

#include "kiln/types.h"
#include "kiln/context.h"

#ifdef __cplusplus
extern "C" {
#endif

struct kiln_buf;

/* The fields above the line are the public, read-only description; those below belong to
 * the engine. */
typedef struct kiln_tensor {
    kiln_dtype dtype;
    int ndim;
    int64_t shape[KILN_MAX_DIMS];
    /* ---- engine-private ---- */
    kiln_ctx *ctx;
    struct kiln_buf *buf;      /* storage (backend-owned) */
    size_t offset;             /* byte offset of element 0 in buf */
    struct kiln_tensor *base;  /* the tensor a view was taken of, or NULL */
    struct kiln_tensor *grad;  /* gradient, allocated by backward, same shape */
    unsigned flags;            /* KILN_TF_* */
    int tape_index;            /* index of the tape record that produced it, or -1 */
} kiln_tensor;

enum {
    KILN_TF_REQUIRES_GRAD = 1u << 0,
    KILN_TF_PERSISTENT = 1u << 1, /* owns its storage outside the arena */
    KILN_TF_OWNS_BUF = 1u << 2
};

/* A new persistent tensor, zero-filled. ndim 0 is a scalar (one element). */
kiln_tensor *kiln_tensor_new(kiln_ctx *ctx, kiln_dtype dtype, int ndim, const int64_t *shape);
void kiln_tensor_free(kiln_tensor *t);

/* A convenience for the common cases: kiln_tensor_new with shape {d0, d1, ...}. */
kiln_tensor *kiln_tensor_1d(kiln_ctx *ctx, kiln_dtype dtype, int64_t d0);
kiln_tensor *kiln_tensor_2d(kiln_ctx *ctx, kiln_dtype dtype, int64_t d0, int64_t d1);

/* A new step tensor (arena), contents undefined. */
kiln_tensor *kiln_tensor_temp(kiln_ctx *ctx, kiln_dtype dtype, int ndim, const int64_t *shape);

int64_t kiln_numel(const kiln_tensor *t);
size_t kiln_nbytes(const kiln_tensor *t);
int kiln_same_shape(const kiln_tensor *a, const kiln_tensor *b);

/* Marks a tensor as a leaf whose gradient backward computes (weights, test inputs). */
void kiln_set_requires_grad(kiln_tensor *t, int requires_grad);
int kiln_requires_grad(const kiln_tensor *t);
/* The gradient after kiln_backward, or NULL if none reached this tensor. */
kiln_tensor *kiln_grad(const kiln_tensor *t);

/* Host transfers. Sizes are in bytes and must equal kiln_nbytes(t). Reading waits for the
 * ops that produce t, and reports KILN_ERR_RANGE when a device kernel met a bad index (a
 * token id, a target) since the last read: GPU kernels cannot fail where they run. A NULL
 * tensor (an op that failed) keeps the pending error, as the ops do. */
kiln_status kiln_upload(kiln_tensor *t, const void *src, size_t bytes);
kiln_status kiln_download(const kiln_tensor *t, void *dst, size_t bytes);
/* f32 convenience: converts from/to f16 when t is f16; t must not be i32. */
kiln_status kiln_upload_f32(kiln_tensor *t, const float *src, int64_t count);
kiln_status kiln_download_f32(const kiln_tensor *t, float *dst, int64_t count);
/* Reads element 0 as a float (a loss, a norm). */
kiln_status kiln_read_scalar(const kiln_tensor *t, float *value);
/* Sets every element to `value` (i32 tensors get (int32_t)value). */
kiln_status kiln_fill(kiln_tensor *t, float value);
/* Copies src into dst (same shape; dtypes may differ between f32 and f16). Not recorded. */
kiln_status kiln_copy(kiln_tensor *dst, const kiln_tensor *src);

/* Views. The view shares storage and, for autograd, its gradient is the matching view of
 * the base's gradient. */
kiln_tensor *kiln_reshape(kiln_tensor *t, int ndim, const int64_t *shape);
/* Rows [start, start+count) along axis 0. */
kiln_tensor *kiln_view_rows(kiln_tensor *t, int64_t start, int64_t count);

/* f32 <-> f16 conversion helpers (round-to-nearest-even), for hosts and tests. */
uint16_t kiln_f32_to_f16(float value);
float kiln_f16_to_f32(uint16_t value);

#ifdef __cplusplus
}
#endif
#endif
