/* Host side of the layout copies in cl/shape.cl: the axis swap (split/merge heads) and the
 * block copy along a middle axis (concat, slice), each plain or accumulating; and the dtype
 * cast (cl/memory.cl through cl_transfer.c, cl/elementwise.cl). */
#include "opencl/cl_internal.h"

/* Work-group shape for the copy kernels: whole rows along dimension 0 when they are long,
 * and the driver's choice otherwise. */
static kiln_status run_3d(cl_call *c, const size_t global[3]) {
    size_t wg = c->dev->wg_elem, local[3] = {wg, 1, 1};
    if (global[0] >= wg) return cl_run(c, 3, global, local);
    return cl_run(c, 3, global, NULL);
}

/* A call of the copy kernel `name` of shape.cl for elements of `dtype`: i32 elements move
 * through the f32 variant (4-byte moves); adding them is not a copy the contract defines. */
static kiln_status begin_copy(cl_dev *d, const char *name, kiln_dtype dtype, int accumulate,
                              cl_call *c) {
    if (dtype == KILN_I32 && accumulate)
        return kiln_set_error(KILN_ERR_DTYPE,
                              "opencl %s: accumulating i32 elements is not supported", name);
    *c = cl_begin_dt(d, "shape", name, dtype == KILN_I32 ? KILN_F32 : dtype);
    return KILN_OK;
}

kiln_status cl_permute(void *dev, const kiln_permute_args *a) {
    cl_call c;
    kiln_status s = begin_copy(dev, "permute", a->dtype, a->accumulate, &c);
    if (s) return s;
    size_t es = kiln_dtype_size(a->dtype);
    cl_arg_op(&c, CL_OP(permute, x), a->x, es);
    cl_arg_op(&c, CL_OP(permute, y), a->y, es);
    cl_arg_i64(&c, a->d1);
    cl_arg_i64(&c, a->d2);
    cl_arg_i64(&c, a->d3);
    cl_arg_i32(&c, a->accumulate);
    size_t global[3] = {(size_t)a->d3, (size_t)a->d2, (size_t)(a->d0 * a->d1)};
    return run_3d(&c, global);
}

kiln_status cl_copy_block(void *dev, const kiln_copy_block_args *a) {
    cl_call c;
    kiln_status s = begin_copy(dev, "copy_block", a->dtype, a->accumulate, &c);
    if (s) return s;
    size_t es = kiln_dtype_size(a->dtype);
    cl_arg_op(&c, CL_OP(copy_block, src), a->src, es);
    cl_arg_op(&c, CL_OP(copy_block, dst), a->dst, es);
    cl_arg_i64(&c, a->inner);
    cl_arg_i64(&c, a->src_axis);
    cl_arg_i64(&c, a->dst_axis);
    cl_arg_i64(&c, a->src_start);
    cl_arg_i64(&c, a->dst_start);
    cl_arg_i32(&c, a->accumulate);
    size_t global[3] = {(size_t)a->inner, (size_t)a->len, (size_t)a->outer};
    return run_3d(&c, global);
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
    int to_half = a->dst_dtype == KILN_F16;
    cl_arg_op(&c, to_half ? CL_OP(cast_f32_f16, src) : CL_OP(cast_f16_f32, src), a->src, kiln_dtype_size(a->src_dtype));
    cl_arg_op(&c, to_half ? CL_OP(cast_f32_f16, dst) : CL_OP(cast_f16_f32, dst), a->dst, kiln_dtype_size(a->dst_dtype));
    cl_arg_i64(&c, a->n);
    return cl_run_1d(&c, (size_t)a->n);
}
