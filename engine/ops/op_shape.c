/* Shape ops that copy: split/merge heads (an axis swap), concat and slice (block copies
 * along one axis), and cast. Each backward moves the gradient the opposite way and
 * accumulates. Moves keep the dtype (f32 or f16): they round nothing. */
#include <stdio.h>

#include "core/internal.h"
#include "ops/op_grad.h"

/* ---- split / merge heads ---- */

/* y[a, c, b, d] (+)= x[a, b, c, d] for x viewed as [d0, d1, d2, d3]. */
static kiln_status swap_axes(kiln_ctx *ctx, const kiln_tensor *x, kiln_tensor *y, int64_t d0, int64_t d1,
                             int64_t d2, int64_t d3, int accumulate) {
    kiln_permute_args a = {
        .x = kiln_ref_of(x),
        .y = kiln_ref_of(y),
        .d0 = d0,
        .d1 = d1,
        .d2 = d2,
        .d3 = d3,
        .accumulate = accumulate,
        .dtype = x->dtype,
    };
    return KILN_CALL(ctx, permute, &a);
}

/* The forward swapped axes 1 and 2 of in[0] viewed as [i[0], i[1], i[2], i[3]]; the
 * gradient swaps them back: dy is [i[0], i[2], i[1], i[3]]. */
static kiln_status swap_backward(kiln_tape_rec *rec) {
    int fresh;
    kiln_tensor *dx = op_grad_overwrite(rec->in[0], &fresh);
    if (!dx) return kiln_error_status();
    return swap_axes(dx->ctx, rec->out->grad, dx, rec->i[0], rec->i[2], rec->i[1], rec->i[3], !fresh);
}

static kiln_tensor *swap_op(kiln_tensor *x, int ndim_out, const int64_t *shape_out, int64_t d0, int64_t d1,
                            int64_t d2, int64_t d3) {
    kiln_ctx *ctx = x->ctx;
    kiln_tensor *y = kiln_op_output(ctx, x->dtype, ndim_out, shape_out);
    if (!y || swap_axes(ctx, x, y, d0, d1, d2, d3, 0)) return NULL;
    if (kiln_needs_tape(ctx, 1, &x)) {
        kiln_tape_rec *rec = kiln_tape_push(ctx, swap_backward, y, 1, &x);
        if (!rec) return NULL;
        rec->i[0] = d0, rec->i[1] = d1, rec->i[2] = d2, rec->i[3] = d3;
    }
    return y;
}

kiln_tensor *kiln_split_heads(kiln_tensor *x, int heads) {
    if (!x) return NULL;
    char sx[64];
    if (kiln_check_float("split_heads", x, "x")) return NULL;
    if (x->ndim != 3)
        return kiln_fail(KILN_ERR_SHAPE, "split_heads: x must be 3-D [B, T, H*D], got %s",
                         kiln_shape_str(x, sx, sizeof sx));
    int64_t b = x->shape[0], t = x->shape[1], c = x->shape[2];
    if (heads < 1 || c % heads != 0)
        return kiln_fail(KILN_ERR_SHAPE, "split_heads: the %lld channels of x %s do not split into %d heads",
                         (long long)c, kiln_shape_str(x, sx, sizeof sx), heads);
    int64_t d = c / heads, shape[4] = {b, heads, t, d};
    return swap_op(x, 4, shape, b, t, heads, d);
}

kiln_tensor *kiln_merge_heads(kiln_tensor *x) {
    if (!x) return NULL;
    char sx[64];
    if (kiln_check_float("merge_heads", x, "x")) return NULL;
    if (x->ndim != 4)
        return kiln_fail(KILN_ERR_SHAPE, "merge_heads: x must be 4-D [B, H, T, D], got %s",
                         kiln_shape_str(x, sx, sizeof sx));
    int64_t b = x->shape[0], h = x->shape[1], t = x->shape[2], d = x->shape[3];
    int64_t shape[3] = {b, t, h * d};
    return swap_op(x, 3, shape, b, h, t, d);
}

/* ---- concat / slice ---- */

/* Resolves a possibly negative axis of an ndim-dim tensor; -1 (error set) when out of range. */
static int resolve_axis(const char *name, int axis, int ndim) {
    int a = axis < 0 ? axis + ndim : axis;
    if (a < 0 || a >= ndim) {
        kiln_set_error(KILN_ERR_RANGE, "%s: axis %d is out of range for a %d-D tensor (use 0..%d or -%d..-1)",
                       name, axis, ndim, ndim - 1, ndim);
        return -1;
    }
    return a;
}

/* dst[o, dst_start + i, k] (+)= src[o, src_start + i, k] with src, dst viewed as
 * [outer, axis, inner] around `axis`. */
static kiln_status copy_block(const kiln_tensor *src, int64_t src_start, kiln_tensor *dst, int64_t dst_start,
                              int axis, int64_t len, int accumulate) {
    kiln_copy_block_args a = {0};
    a.src = kiln_ref_of(src);
    a.dst = kiln_ref_of(dst);
    a.outer = kiln_shape_numel(axis, src->shape);
    a.inner = kiln_shape_numel(src->ndim - axis - 1, src->shape + axis + 1);
    a.src_axis = src->shape[axis];
    a.dst_axis = dst->shape[axis];
    a.src_start = src_start;
    a.dst_start = dst_start;
    a.len = len;
    a.accumulate = accumulate;
    a.dtype = dst->dtype;
    return KILN_CALL(dst->ctx, copy_block, &a);
}

/* Input t filled out[..., offset_t : offset_t + len_t, ...]: its gradient is that block of
 * dy, which covers all of it (so a fresh gradient is copied, not added to). */
static kiln_status concat_backward(kiln_tape_rec *rec) {
    int axis = (int)rec->i[0];
    int64_t offset = 0;
    for (int t = 0; t < rec->n_in; t++) {
        kiln_tensor *x = rec->in[t], *dx;
        int fresh;
        kiln_status s = op_grad_to_write(x, &dx, &fresh);
        if (s) return s;
        if (dx && (s = copy_block(rec->out->grad, offset, dx, 0, axis, x->shape[axis], !fresh))) return s;
        offset += x->shape[axis];
    }
    return KILN_OK;
}

kiln_tensor *kiln_concat(kiln_tensor *const *xs, int count, int axis) {
    if (!xs || count < 1)
        return kiln_fail(KILN_ERR_ARGUMENT, "concat: needs at least one tensor (got %d%s)", count,
                         xs ? "" : ", xs is NULL");
    for (int t = 0; t < count; t++)
        if (!xs[t]) return NULL;
    const kiln_tensor *x0 = xs[0];
    char s0[64], st[64];
    if (x0->ndim < 1) return kiln_fail(KILN_ERR_SHAPE, "concat: input 0 is a scalar; it has no axis to join on");
    int ax = resolve_axis("concat", axis, x0->ndim);
    if (ax < 0) return NULL;
    int64_t shape[KILN_MAX_DIMS];
    for (int i = 0; i < x0->ndim; i++) shape[i] = x0->shape[i];
    shape[ax] = 0;
    for (int t = 0; t < count; t++) {
        const kiln_tensor *x = xs[t];
        char what[32];
        snprintf(what, sizeof what, "input %d", t);
        if (kiln_check_same_dtype("concat", x, what, x0, "input 0")) return NULL;
        if (x->ctx != x0->ctx)
            return kiln_fail(KILN_ERR_ARGUMENT, "concat: input %d belongs to a different context than input 0", t);
        int same = x->ndim == x0->ndim;
        for (int i = 0; same && i < x->ndim; i++) same = i == ax || x->shape[i] == x0->shape[i];
        if (!same)
            return kiln_fail(KILN_ERR_SHAPE, "concat: input %d is %s but input 0 is %s; every dim except axis %d must match",
                             t, kiln_shape_str(x, st, sizeof st), kiln_shape_str(x0, s0, sizeof s0), ax);
        shape[ax] += x->shape[ax];
    }
    kiln_ctx *ctx = x0->ctx;
    kiln_tensor *out = kiln_op_output(ctx, x0->dtype, x0->ndim, shape);
    if (!out) return NULL;
    int64_t offset = 0;
    for (int t = 0; t < count; t++) {
        if (copy_block(xs[t], 0, out, offset, ax, xs[t]->shape[ax], 0)) return NULL;
        offset += xs[t]->shape[ax];
    }
    if (kiln_needs_tape(ctx, count, xs)) {
        kiln_tape_rec *rec = kiln_tape_push(ctx, concat_backward, out, count, xs);
        if (!rec) return NULL;
        rec->i[0] = ax;
    }
    return out;
}

/* dx[..., start : start + len, ...] += dy */
static kiln_status slice_backward(kiln_tape_rec *rec) {
    kiln_tensor *dx = kiln_grad_acc(rec->in[0]), *dy = rec->out->grad;
    if (!dx) return kiln_error_status();
    int axis = (int)rec->i[0];
    return copy_block(dy, 0, dx, rec->i[1], axis, dy->shape[axis], 1);
}

kiln_tensor *kiln_slice(kiln_tensor *x, int axis, int64_t start, int64_t len) {
    if (!x) return NULL;
    char sx[64];
    if (kiln_check_float("slice", x, "x")) return NULL;
    if (x->ndim < 1) return kiln_fail(KILN_ERR_SHAPE, "slice: x is a scalar; it has no axis to slice");
    int ax = resolve_axis("slice", axis, x->ndim);
    if (ax < 0) return NULL;
    int64_t dim = x->shape[ax];
    if (start < 0 || len < 1 || start > dim - len)
        return kiln_fail(KILN_ERR_RANGE, "slice: elements [%lld, %lld) are not inside axis %d of x %s (size %lld; "
                                         "start >= 0 and len >= 1)",
                         (long long)start, (long long)(start + len), ax, kiln_shape_str(x, sx, sizeof sx),
                         (long long)dim);
    int64_t shape[KILN_MAX_DIMS];
    for (int i = 0; i < x->ndim; i++) shape[i] = x->shape[i];
    shape[ax] = len;
    kiln_ctx *ctx = x->ctx;
    kiln_tensor *out = kiln_op_output(ctx, x->dtype, x->ndim, shape);
    if (!out || copy_block(x, start, out, 0, ax, len, 0)) return NULL;
    if (kiln_needs_tape(ctx, 1, &x)) {
        kiln_tape_rec *rec = kiln_tape_push(ctx, slice_backward, out, 1, &x);
        if (!rec) return NULL;
        rec->i[0] = ax;
        rec->i[1] = start;
    }
    return out;
}

/* ---- cast ---- */

/* dst = src converted to dst's dtype; the callers have checked sizes and dtypes, which
 * kiln_copy checks again. */
static kiln_status cast_into(const kiln_tensor *src, kiln_tensor *dst) { return kiln_copy(dst, src); }

/* y += x over tensors of one dtype and size (in f16: load, add in f32, round once). */
static kiln_status add_into(const kiln_tensor *x, kiln_tensor *y) {
    kiln_axpby_args a = {
        .x = kiln_ref_of(x),
        .y = kiln_ref_of(y),
        .n = kiln_numel(x),
        .alpha = 1.0f,
        .beta = 1.0f,
        .dtype = y->dtype,
    };
    return KILN_CALL(y->ctx, axpby, &a);
}

/* dx += (dtype of x) dy, rounding once. Same dtypes: one accumulating add. dy f16 into an
 * f32 dx: dy widened first (exact), then added. dy f32 into an f16 dx: the sum is formed in
 * f32 (dx widened, dy added) and rounded once back into dx, instead of rounding dy to f16
 * and then the sum again. */
static kiln_status cast_backward(kiln_tape_rec *rec) {
    int fresh;
    kiln_tensor *dx = op_grad_overwrite(rec->in[0], &fresh), *dy = rec->out->grad;
    if (!dx) return kiln_error_status();
    /* a fresh dx is (dtype of x) (0 + dy): dy converted once */
    if (fresh) return cast_into(dy, dx);
    if (dy->dtype == dx->dtype) return add_into(dy, dx);
    kiln_ctx *ctx = dx->ctx;
    if (dx->dtype == KILN_F32) {
        kiln_tensor *t = kiln_tensor_temp(ctx, KILN_F32, dy->ndim, dy->shape);
        if (!t || cast_into(dy, t) || add_into(t, dx)) return kiln_error_status();
        return KILN_OK;
    }
    kiln_tensor *acc = kiln_tensor_temp(ctx, KILN_F32, dx->ndim, dx->shape);
    if (!acc || cast_into(dx, acc) || add_into(dy, acc) || cast_into(acc, dx)) return kiln_error_status();
    return KILN_OK;
}

kiln_tensor *kiln_cast(kiln_tensor *x, kiln_dtype dtype) {
    if (!x) return NULL;
    if ((unsigned)dtype > KILN_I32)
        return kiln_fail(KILN_ERR_DTYPE, "cast: unknown dtype %d (use KILN_F32, KILN_F16 or KILN_I32)", (int)dtype);
    int is_float_x = x->dtype != KILN_I32, is_float_y = dtype != KILN_I32;
    if (x->dtype != dtype && (!is_float_x || !is_float_y))
        return kiln_fail(KILN_ERR_DTYPE, "cast: cannot convert %s to %s (casts go between f32 and f16; i32 only copies)",
                         kiln_dtype_name(x->dtype), kiln_dtype_name(dtype));
    kiln_ctx *ctx = x->ctx;
    kiln_tensor *y = kiln_op_output(ctx, dtype, x->ndim, x->shape);
    if (!y || cast_into(x, y)) return NULL;
    if (is_float_x && kiln_needs_tape(ctx, 1, &x)) { /* integers carry no gradient */
        if (!kiln_tape_push(ctx, cast_backward, y, 1, &x)) return NULL;
    }
    return y;
}
