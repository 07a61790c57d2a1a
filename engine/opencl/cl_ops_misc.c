/* Host side of cl/dropout.cl, cl/shape.cl and cl/optim.cl. */
#include "opencl/cl_internal.h"

static kiln_status dropout(cl_dev *d, const char *name, kiln_ref in, kiln_ref out,
                           const kiln_dropout_args *a) {
    size_t es = kiln_dtype_size(a->dtype);
    cl_call c = cl_begin_dt(d, "dropout", name, a->dtype);
    cl_arg_ref(&c, in, es);
    cl_arg_ref(&c, out, es);
    cl_arg_i64(&c, a->n);
    cl_arg_f32(&c, a->prob);
    cl_arg_u64(&c, a->seed);
    cl_arg_u64(&c, a->stream);
    return cl_run_1d(&c, (size_t)a->n);
}

kiln_status cl_dropout_fwd(void *dev, const kiln_dropout_args *a) {
    return dropout(dev, "dropout_fwd", a->x, a->y, a);
}
kiln_status cl_dropout_bwd(void *dev, const kiln_dropout_args *a) {
    return dropout(dev, "dropout_bwd", a->dy, a->dx, a);
}

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

kiln_status cl_sinusoid(void *dev, const kiln_sinusoid_args *a) {
    cl_dev *d = dev;
    cl_call c = cl_begin_dt(d, "shape", "sinusoid", a->dtype);
    cl_arg_ref(&c, a->out, kiln_dtype_size(a->dtype));
    cl_arg_i64(&c, a->channels);
    size_t global[2] = {(size_t)a->channels, (size_t)a->positions}, local[2] = {d->wg_elem, 1};
    return cl_run(&c, 2, global, local);
}

kiln_status cl_clip_coef(void *dev, const kiln_clip_args *a) {
    cl_call c = cl_begin(dev, "optim", "clip_coef");
    cl_arg_ref(&c, a->sumsq, 4);
    cl_arg_ref(&c, a->coef, 4);
    cl_arg_ref(&c, a->norm, 4);
    cl_arg_f32(&c, a->clip);
    cl_arg_f32(&c, a->unscale);
    cl_arg_i32(&c, cl_has(a->coef));
    cl_arg_i32(&c, cl_has(a->norm));
    size_t one = 1;
    return cl_run(&c, 1, &one, &one);
}

kiln_status cl_adam(void *dev, const kiln_adam_args *a) {
    cl_call c = cl_begin(dev, "optim", "adam");
    cl_arg_ref(&c, a->param, 4);
    cl_arg_ref(&c, a->grad, kiln_dtype_size(a->grad_dtype));
    cl_arg_ref(&c, a->m, 4);
    cl_arg_ref(&c, a->v, 4);
    cl_arg_ref(&c, a->half_copy, 2);
    cl_arg_ref(&c, a->coef, 4);
    cl_arg_ref(&c, a->skip, 4);
    cl_arg_i32(&c, (int)a->grad_dtype);
    cl_arg_i64(&c, a->n);
    cl_arg_f32(&c, a->lr);
    cl_arg_f32(&c, a->beta1);
    cl_arg_f32(&c, a->beta2);
    cl_arg_f32(&c, a->eps);
    cl_arg_f32(&c, a->weight_decay);
    cl_arg_f32(&c, a->bc1);
    cl_arg_f32(&c, a->bc2);
    cl_arg_i32(&c, a->decoupled);
    cl_arg_i32(&c, cl_has(a->half_copy));
    cl_arg_i32(&c, cl_has(a->coef));
    cl_arg_i32(&c, cl_has(a->skip));
    return cl_run_1d(&c, (size_t)a->n);
}
