/* Host side of the layout copies in cl/shape.cl: the axis swap (split/merge heads) and the
 * block copy along a middle axis (concat, slice), each plain or accumulating. */
#include "opencl/cl_internal.h"

/* Work-group shape for the copy kernels: whole rows along dimension 0 when they are long,
 * and the driver's choice otherwise. */
static kiln_status run_3d(cl_call *c, const size_t global[3]) {
    size_t wg = c->dev->wg_elem, local[3] = {wg, 1, 1};
    if (global[0] >= wg) return cl_run(c, 3, global, local);
    return cl_run(c, 3, global, NULL);
}

/* The variant of shape.cl for a copy: i32 elements move through the f32 variant (4-byte
 * moves); adding them is not a copy the contract defines. */
static kiln_status copy_dtype(kiln_dtype dtype, int accumulate, const char *what, kiln_dtype *variant) {
    *variant = dtype == KILN_I32 ? KILN_F32 : dtype;
    if (dtype == KILN_I32 && accumulate)
        return kiln_set_error(KILN_ERR_DTYPE, "opencl %s: accumulating i32 elements is not supported", what);
    return KILN_OK;
}

kiln_status cl_permute(void *dev, const kiln_permute_args *a) {
    kiln_dtype variant;
    kiln_status s = copy_dtype(a->dtype, a->accumulate, "permute", &variant);
    if (s) return s;
    size_t es = kiln_dtype_size(a->dtype);
    cl_call c = cl_begin_dt(dev, "shape", "permute", variant);
    cl_arg_ref(&c, a->x, es);
    cl_arg_ref(&c, a->y, es);
    cl_arg_i64(&c, a->d1);
    cl_arg_i64(&c, a->d2);
    cl_arg_i64(&c, a->d3);
    cl_arg_i32(&c, a->accumulate);
    size_t global[3] = {(size_t)a->d3, (size_t)a->d2, (size_t)(a->d0 * a->d1)};
    return run_3d(&c, global);
}

kiln_status cl_copy_block(void *dev, const kiln_copy_block_args *a) {
    kiln_dtype variant;
    kiln_status s = copy_dtype(a->dtype, a->accumulate, "copy_block", &variant);
    if (s) return s;
    size_t es = kiln_dtype_size(a->dtype);
    cl_call c = cl_begin_dt(dev, "shape", "copy_block", variant);
    cl_arg_ref(&c, a->src, es);
    cl_arg_ref(&c, a->dst, es);
    cl_arg_i64(&c, a->inner);
    cl_arg_i64(&c, a->src_axis);
    cl_arg_i64(&c, a->dst_axis);
    cl_arg_i64(&c, a->src_start);
    cl_arg_i64(&c, a->dst_start);
    cl_arg_i32(&c, a->accumulate);
    size_t global[3] = {(size_t)a->inner, (size_t)a->len, (size_t)a->outer};
    return run_3d(&c, global);
}
