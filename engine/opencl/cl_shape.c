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
    cl_call c;
    kiln_status s = begin_copy(dev, "copy_block", a->dtype, a->accumulate, &c);
    if (s) return s;
    size_t es = kiln_dtype_size(a->dtype);
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
