/* Tensors: allocation (persistent or arena), views, host transfers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"

int64_t kiln_shape_numel(int ndim, const int64_t *shape) {
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) n *= shape[i];
    return n;
}

int64_t kiln_numel(const kiln_tensor *t) { return t ? kiln_shape_numel(t->ndim, t->shape) : 0; }
size_t kiln_nbytes(const kiln_tensor *t) {
    return t ? (size_t)kiln_numel(t) * kiln_dtype_size(t->dtype) : 0;
}

int kiln_same_shape(const kiln_tensor *a, const kiln_tensor *b) {
    if (a->ndim != b->ndim) return 0;
    for (int i = 0; i < a->ndim; i++)
        if (a->shape[i] != b->shape[i]) return 0;
    return 1;
}

const char *kiln_shape_str(const kiln_tensor *t, char *buf, size_t size) {
    size_t at = 0;
    at += (size_t)snprintf(buf + at, size - at, "[");
    for (int i = 0; i < t->ndim && at < size; i++)
        at += (size_t)snprintf(buf + at, size - at, i ? ", %lld" : "%lld", (long long)t->shape[i]);
    if (at < size) snprintf(buf + at, size - at, "]");
    return buf;
}

static kiln_status check_shape(int ndim, const int64_t *shape, const char *what) {
    if (ndim < 0 || ndim > KILN_MAX_DIMS)
        return kiln_set_error(KILN_ERR_SHAPE, "%s: %d dims; kiln tensors have 0 to %d", what,
                              ndim, KILN_MAX_DIMS);
    if (ndim > 0 && !shape) return kiln_set_error(KILN_ERR_ARGUMENT, "%s: shape is NULL", what);
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] <= 0)
            return kiln_set_error(KILN_ERR_SHAPE, "%s: dim %d is %lld; sizes must be positive",
                                  what, i, (long long)shape[i]);
        if (n > ((int64_t)1 << 40) / shape[i])
            return kiln_set_error(KILN_ERR_SHAPE, "%s: too many elements", what);
        n *= shape[i];
    }
    return KILN_OK;
}

/* A known dtype that the device can store. */
static kiln_status check_dtype(kiln_ctx *ctx, kiln_dtype dtype, const char *what) {
    if ((unsigned)dtype > KILN_I32)
        return kiln_set_error(KILN_ERR_DTYPE, "%s: unknown dtype %d (use KILN_F32, KILN_F16 or KILN_I32)", what,
                              (int)dtype);
    if (!kiln_supports_dtype(ctx, dtype))
        return kiln_set_error(KILN_ERR_UNSUPPORTED, "%s cannot store %s (no 16-bit storage buffers); use fp32",
                              kiln_device_name(ctx), kiln_dtype_name(dtype));
    return KILN_OK;
}

static kiln_tensor *describe(kiln_tensor *t, kiln_ctx *ctx, kiln_dtype dtype, int ndim,
                             const int64_t *shape) {
    t->ctx = ctx;
    t->dtype = dtype;
    t->ndim = ndim;
    for (int i = 0; i < KILN_MAX_DIMS; i++) t->shape[i] = i < ndim ? shape[i] : 1;
    t->tape_index = -1;
    return t;
}

kiln_status kiln_zero(kiln_tensor *t) { return kiln_fill(t, 0.0f); }

kiln_tensor *kiln_tensor_new(kiln_ctx *ctx, kiln_dtype dtype, int ndim, const int64_t *shape) {
    if (!ctx) return kiln_fail(KILN_ERR_ARGUMENT, "kiln_tensor_new: ctx is NULL");
    if (check_dtype(ctx, dtype, "kiln_tensor_new") || check_shape(ndim, shape, "kiln_tensor_new")) return NULL;
    kiln_tensor *t = calloc(1, sizeof *t);
    if (!t) return kiln_fail(KILN_ERR_MEMORY, "out of host memory");
    describe(t, ctx, dtype, ndim, shape);
    size_t bytes = kiln_nbytes(t);
    if (ctx->be->max_buffer_bytes && bytes > ctx->be->max_buffer_bytes) {
        free(t);
        return kiln_fail(KILN_ERR_MEMORY, "a tensor of %zu bytes exceeds the device's largest buffer (%zu bytes)",
                         bytes, ctx->be->max_buffer_bytes);
    }
    if (kiln_device_alloc(ctx, bytes, &t->buf)) {
        free(t);
        return NULL;
    }
    t->flags = KILN_TF_PERSISTENT | KILN_TF_OWNS_BUF;
    if (kiln_owned_add(ctx, t)) {
        ctx->be->free(ctx->dev, t->buf);
        free(t);
        return NULL;
    }
    ctx->persistent_bytes += bytes;
    if (kiln_zero(t)) {
        kiln_tensor_free(t);
        return NULL;
    }
    return t;
}

kiln_tensor *kiln_tensor_1d(kiln_ctx *ctx, kiln_dtype dtype, int64_t d0) {
    return kiln_tensor_new(ctx, dtype, 1, &d0);
}

kiln_tensor *kiln_tensor_2d(kiln_ctx *ctx, kiln_dtype dtype, int64_t d0, int64_t d1) {
    int64_t shape[2] = {d0, d1};
    return kiln_tensor_new(ctx, dtype, 2, shape);
}

void kiln_tensor_free(kiln_tensor *t) {
    if (!t) return;
    if (!(t->flags & KILN_TF_PERSISTENT)) return; /* step tensors go with the step */
    kiln_ctx *ctx = t->ctx;
    if (t->grad && (t->grad->flags & KILN_TF_PERSISTENT)) kiln_tensor_free(t->grad);
    if (t->flags & KILN_TF_OWNS_BUF) {
        ctx->be->free(ctx->dev, t->buf);
        ctx->persistent_bytes -= kiln_nbytes(t);
        kiln_owned_remove(ctx, t);
    }
    free(t);
}

kiln_tensor *kiln_tensor_temp(kiln_ctx *ctx, kiln_dtype dtype, int ndim, const int64_t *shape) {
    if (!ctx) return kiln_fail(KILN_ERR_ARGUMENT, "kiln_tensor_temp: ctx is NULL");
    if (check_dtype(ctx, dtype, "kiln_tensor_temp") || check_shape(ndim, shape, "kiln_tensor_temp")) return NULL;
    kiln_tensor *t = kiln_step_malloc(ctx, sizeof *t);
    if (!t) return NULL;
    describe(t, ctx, dtype, ndim, shape);
    if (kiln_arena_alloc(ctx, kiln_nbytes(t), &t->buf, &t->offset)) return NULL;
    return t;
}

kiln_tensor *kiln_op_output(kiln_ctx *ctx, kiln_dtype dtype, int ndim, const int64_t *shape) {
    return kiln_tensor_temp(ctx, dtype, ndim, shape);
}

void kiln_set_requires_grad(kiln_tensor *t, int requires_grad) {
    if (!t) return;
    if (requires_grad)
        t->flags |= KILN_TF_REQUIRES_GRAD;
    else
        t->flags &= ~KILN_TF_REQUIRES_GRAD;
}

int kiln_requires_grad(const kiln_tensor *t) {
    if (!t) return 0;
    if (t->base) return kiln_requires_grad(t->base);
    return (t->flags & KILN_TF_REQUIRES_GRAD) != 0;
}

kiln_tensor *kiln_grad(const kiln_tensor *t) { return t ? t->grad : NULL; }

/* ---- transfers ---- */

/* A NULL tensor given to a transfer is most often the result of an op that failed
 * (kiln_read_scalar(gpt_loss(...))): as the ops do with NULL inputs, keep that op's error
 * rather than replace it with "NULL argument", which would hide a lost device or a shape
 * mismatch behind a message about the caller. */
static kiln_status null_tensor(const char *what) {
    kiln_status pending = kiln_error_status();
    return pending != KILN_OK ? pending : kiln_set_error(KILN_ERR_ARGUMENT, "%s: tensor is NULL", what);
}

static kiln_status check_bytes(const kiln_tensor *t, size_t bytes, const char *what) {
    if (!t) return null_tensor(what);
    if (bytes != kiln_nbytes(t))
        return kiln_set_error(KILN_ERR_SHAPE, "%s: %zu bytes given, the tensor holds %zu", what,
                              bytes, kiln_nbytes(t));
    return KILN_OK;
}

kiln_status kiln_upload(kiln_tensor *t, const void *src, size_t bytes) {
    kiln_status s = check_bytes(t, bytes, "kiln_upload");
    if (s) return s;
    return t->ctx->be->upload(t->ctx->dev, kiln_ref_of(t), src, bytes);
}

kiln_status kiln_download(const kiln_tensor *t, void *dst, size_t bytes) {
    kiln_status s = check_bytes(t, bytes, "kiln_download");
    if (s) return s;
    s = t->ctx->be->download(t->ctx->dev, kiln_ref_of(t), dst, bytes);
    /* the read has synced: now is when a device kernel's bad-index flag becomes visible */
    return s ? s : kiln_check_device_errors(t->ctx);
}

kiln_status kiln_upload_f32(kiln_tensor *t, const float *src, int64_t count) {
    if (!t) return kiln_set_error(KILN_ERR_ARGUMENT, "kiln_upload_f32: tensor is NULL");
    if (count != kiln_numel(t))
        return kiln_set_error(KILN_ERR_SHAPE, "kiln_upload_f32: %lld values given, the tensor holds %lld",
                              (long long)count, (long long)kiln_numel(t));
    if (t->dtype == KILN_F32) return kiln_upload(t, src, (size_t)count * 4);
    if (t->dtype != KILN_F16) return kiln_set_error(KILN_ERR_DTYPE, "kiln_upload_f32: tensor is %s", kiln_dtype_name(t->dtype));
    uint16_t *h = malloc((size_t)count * 2);
    if (!h) return kiln_set_error(KILN_ERR_MEMORY, "out of host memory");
    for (int64_t i = 0; i < count; i++) h[i] = kiln_f32_to_f16(src[i]);
    kiln_status s = kiln_upload(t, h, (size_t)count * 2);
    free(h);
    return s;
}

kiln_status kiln_download_f32(const kiln_tensor *t, float *dst, int64_t count) {
    if (!t) return null_tensor("kiln_download_f32");
    if (count != kiln_numel(t))
        return kiln_set_error(KILN_ERR_SHAPE, "kiln_download_f32: room for %lld values, the tensor holds %lld",
                              (long long)count, (long long)kiln_numel(t));
    if (t->dtype == KILN_F32) return kiln_download(t, dst, (size_t)count * 4);
    if (t->dtype != KILN_F16) return kiln_set_error(KILN_ERR_DTYPE, "kiln_download_f32: tensor is %s", kiln_dtype_name(t->dtype));
    uint16_t *h = malloc((size_t)count * 2);
    if (!h) return kiln_set_error(KILN_ERR_MEMORY, "out of host memory");
    kiln_status s = kiln_download(t, h, (size_t)count * 2);
    for (int64_t i = 0; s == KILN_OK && i < count; i++) dst[i] = kiln_f16_to_f32(h[i]);
    free(h);
    return s;
}

kiln_status kiln_read_scalar(const kiln_tensor *t, float *value) {
    if (!t) return null_tensor("kiln_read_scalar");
    if (!value) return kiln_set_error(KILN_ERR_ARGUMENT, "kiln_read_scalar: value is NULL");
    size_t es = kiln_dtype_size(t->dtype);
    unsigned char raw[4] = {0};
    kiln_status s = t->ctx->be->download(t->ctx->dev, kiln_ref_of(t), raw, es);
    if (!s) s = kiln_check_device_errors(t->ctx);
    if (s) return s;
    if (t->dtype == KILN_F32) {
        memcpy(value, raw, 4);
    } else if (t->dtype == KILN_F16) {
        uint16_t h;
        memcpy(&h, raw, 2);
        *value = kiln_f16_to_f32(h);
    } else {
        int32_t i;
        memcpy(&i, raw, 4);
        *value = (float)i;
    }
    return KILN_OK;
}

kiln_status kiln_fill(kiln_tensor *t, float value) {
    if (!t) return kiln_set_error(KILN_ERR_ARGUMENT, "kiln_fill: tensor is NULL");
    kiln_fill_args a = {.dst = kiln_ref_of(t), .n = kiln_numel(t), .dtype = t->dtype, .value = value};
    return KILN_CALL(t->ctx, fill, &a);
}

kiln_status kiln_copy(kiln_tensor *dst, const kiln_tensor *src) {
    if (!dst || !src) return kiln_set_error(KILN_ERR_ARGUMENT, "kiln_copy: NULL tensor");
    if (kiln_numel(dst) != kiln_numel(src))
        return kiln_set_error(KILN_ERR_SHAPE, "kiln_copy: %lld elements into %lld",
                              (long long)kiln_numel(src), (long long)kiln_numel(dst));
    if (dst->dtype != src->dtype && (dst->dtype == KILN_I32 || src->dtype == KILN_I32))
        return kiln_set_error(KILN_ERR_DTYPE, "kiln_copy: cannot convert %s to %s",
                              kiln_dtype_name(src->dtype), kiln_dtype_name(dst->dtype));
    kiln_cast_args a = {
        .src = kiln_ref_of(src),
        .dst = kiln_ref_of(dst),
        .n = kiln_numel(src),
        .src_dtype = src->dtype,
        .dst_dtype = dst->dtype,
    };
    return KILN_CALL(dst->ctx, cast, &a);
}

/* ---- views ---- */

static kiln_tensor *make_view(kiln_tensor *t, int ndim, const int64_t *shape, size_t offset) {
    kiln_tensor *v = kiln_step_malloc(t->ctx, sizeof *v);
    if (!v) return NULL;
    describe(v, t->ctx, t->dtype, ndim, shape);
    v->buf = t->buf;
    v->offset = offset;
    v->base = t->base ? t->base : t;
    return v;
}

kiln_tensor *kiln_reshape(kiln_tensor *t, int ndim, const int64_t *shape) {
    if (!t) return NULL;
    if (check_shape(ndim, shape, "kiln_reshape")) return NULL;
    if (kiln_shape_numel(ndim, shape) != kiln_numel(t)) {
        char s[64];
        return kiln_fail(KILN_ERR_SHAPE, "kiln_reshape: %s has %lld elements, the new shape %lld",
                         kiln_shape_str(t, s, sizeof s), (long long)kiln_numel(t),
                         (long long)kiln_shape_numel(ndim, shape));
    }
    return make_view(t, ndim, shape, t->offset);
}

kiln_tensor *kiln_view_rows(kiln_tensor *t, int64_t start, int64_t count) {
    if (!t) return NULL;
    if (t->ndim < 1) return kiln_fail(KILN_ERR_SHAPE, "kiln_view_rows: a scalar has no rows");
    if (start < 0 || count <= 0 || start + count > t->shape[0])
        return kiln_fail(KILN_ERR_RANGE, "kiln_view_rows: rows [%lld, %lld) outside [0, %lld)",
                         (long long)start, (long long)(start + count), (long long)t->shape[0]);
    int64_t shape[KILN_MAX_DIMS];
    memcpy(shape, t->shape, sizeof shape);
    shape[0] = count;
    size_t row_bytes = kiln_nbytes(t) / (size_t)t->shape[0];
    return make_view(t, t->ndim, shape, t->offset + (size_t)start * row_bytes);
}
