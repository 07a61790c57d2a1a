/* Host side of the memory and elementwise kernels, as the CPU backend's cpu_basic.c: fill,
 * cast (cl/memory.cl through cl_transfer.c, cl/elementwise.cl), axpby, binary, and sum_rows
 * (cl/reduce.cl).
 *
 * Every kernel with a `dtype` takes the kernel of the same name from the f16 or f32 variant
 * of its family (cl_begin_dt) and passes its operands with that element size; the f32-only
 * operands (num, den) keep 4. */
#include <string.h>

#include "opencl/cl_internal.h"

kiln_status cl_fill(void *dev, const kiln_fill_args *a) {
    cl_dev *d = dev;
    uint32_t pattern;
    size_t size = kiln_dtype_size(a->dtype);
    if (a->dtype == KILN_F32) {
        memcpy(&pattern, &a->value, 4);
    } else if (a->dtype == KILN_F16) {
        pattern = kiln_f32_to_f16(a->value);
    } else {
        int32_t i = (int32_t)a->value;
        memcpy(&pattern, &i, 4);
    }
    return cl_fill_mem(d, a->dst.buf->block->mem, a->dst.buf->off + a->dst.off,
                       a->n > 0 ? (size_t)a->n : 0, size, pattern);
}

/* A same-dtype copy with the CPU's memmove semantics: overlapping ranges go through a
 * temporary (a parallel copy in place would race). */
static kiln_status copy_bytes(cl_dev *d, kiln_ref src, kiln_ref dst, size_t bytes) {
    cl_mem sm = src.buf->block->mem, dm = dst.buf->block->mem;
    size_t so = src.buf->off + src.off, dof = dst.buf->off + dst.off;
    if (sm == dm && so == dof) return KILN_OK;
    if (!(sm == dm && so < dof + bytes && dof < so + bytes)) return cl_copy_mem(d, sm, so, dm, dof, bytes);
    kiln_buf *tmp;
    kiln_status s = cl_temp(d, bytes, &tmp);
    if (s) return s;
    s = cl_copy_mem(d, sm, so, tmp->block->mem, tmp->off, bytes);
    if (!s) s = cl_copy_mem(d, tmp->block->mem, tmp->off, dm, dof, bytes);
    cl_free(d, tmp); /* safe: see cl_temp */
    return s;
}

kiln_status cl_cast(void *dev, const kiln_cast_args *a) {
    cl_dev *d = dev;
    if (a->n <= 0) return KILN_OK;
    if (a->src_dtype == a->dst_dtype)
        return copy_bytes(d, a->src, a->dst, (size_t)a->n * kiln_dtype_size(a->src_dtype));
    const char *name;
    if (a->src_dtype == KILN_F32 && a->dst_dtype == KILN_F16)
        name = "cast_f32_f16";
    else if (a->src_dtype == KILN_F16 && a->dst_dtype == KILN_F32)
        name = "cast_f16_f32";
    else
        return kiln_set_error(KILN_ERR_DTYPE, "cast from %s to %s is not supported",
                              kiln_dtype_name(a->src_dtype), kiln_dtype_name(a->dst_dtype));
    cl_call c = cl_begin(d, "elementwise", name);
    cl_arg_ref(&c, a->src, kiln_dtype_size(a->src_dtype));
    cl_arg_ref(&c, a->dst, kiln_dtype_size(a->dst_dtype));
    cl_arg_i64(&c, a->n);
    return cl_run_1d(&c, (size_t)a->n);
}

kiln_status cl_axpby(void *dev, const kiln_axpby_args *a) {
    size_t es = kiln_dtype_size(a->dtype);
    cl_call c = cl_begin_dt(dev, "elementwise", "axpby", a->dtype);
    cl_arg_ref(&c, a->x, es);
    cl_arg_ref(&c, a->y, es);
    cl_arg_ref(&c, a->num, 4);
    cl_arg_ref(&c, a->den, 4);
    cl_arg_i64(&c, a->n);
    cl_arg_f32(&c, a->alpha);
    cl_arg_f32(&c, a->beta);
    cl_arg_i32(&c, cl_has(a->x));
    cl_arg_i32(&c, cl_has(a->num));
    cl_arg_i32(&c, cl_has(a->den));
    return cl_run_1d(&c, (size_t)a->n);
}

kiln_status cl_binary(void *dev, const kiln_binary_args *a) {
    static const char *const kernels[] = {
        [KILN_ABI_BIN_ADD] = "binary_add",
        [KILN_ABI_BIN_SUB] = "binary_sub",
        [KILN_ABI_BIN_MUL] = "binary_mul",
        [KILN_ABI_BIN_DIV] = "binary_div",
    };
    if ((unsigned)a->op > KILN_BIN_DIV)
        return kiln_set_error(KILN_ERR_ARGUMENT, "opencl binary: unknown op %d", (int)a->op);
    size_t es = kiln_dtype_size(a->dtype);
    cl_call c = cl_begin_dt(dev, "elementwise", kernels[a->op], a->dtype);
    cl_arg_ref(&c, a->a, es);
    cl_arg_ref(&c, a->b, es);
    cl_arg_ref(&c, a->out, es);
    cl_arg_i64(&c, a->nb);
    /* grid (nb, n / nb) (empty when n is 0); whole groups along a row unless rows are short */
    size_t wg = ((cl_dev *)dev)->wg_elem;
    size_t global[2] = {a->nb > 0 ? (size_t)a->nb : 0, a->nb > 0 ? (size_t)(a->n / a->nb) : 0};
    size_t local[2] = {wg, 1};
    return cl_run(&c, 2, global, global[0] >= wg ? local : NULL);
}

kiln_status cl_sum_rows(void *dev, const kiln_sum_rows_args *a) {
    size_t es = kiln_dtype_size(a->dtype);
    cl_call c = cl_begin_dt(dev, "reduce", "sum_rows", a->dtype);
    cl_arg_ref(&c, a->x, es);
    cl_arg_ref(&c, a->out, es);
    cl_arg_i64(&c, a->rows);
    cl_arg_i64(&c, a->cols);
    cl_arg_f32(&c, a->alpha);
    return cl_run_column_tiles(&c, a->cols);
}
