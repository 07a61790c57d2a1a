/* Host side of cl/norm.cl: LayerNorm and RMSNorm, forward and backward, through the same
 * kernels with the flag `rms` (KILN_ABI_NORM_RMS / KILN_ABI_NORM_LAYER). The operands are in
 * the args' dtype (the f16 or f32 variant of the family), mean and rstd in f32. RMSNorm has
 * no bias and no mean: they are passed as absent. */
#include "opencl/cl_internal.h"

kiln_status cl_norm_fwd(void *dev, const kiln_norm_args *a) {
    cl_dev *d = dev;
    int rms = a->rms;
    kiln_ref absent = {.buf = NULL}, bias = rms ? absent : a->bias, mean = rms ? absent : a->mean;
    size_t es = kiln_dtype_size(a->dtype);
    cl_call c = cl_begin_dt(d, "norm", "norm_fwd", a->dtype);
    cl_arg_op(&c, CL_OP(norm_fwd, x), a->x, es);
    cl_arg_op(&c, CL_OP(norm_fwd, w), a->weight, es);
    cl_arg_op(&c, CL_OP(norm_fwd, b), bias, es);
    cl_arg_op(&c, CL_OP(norm_fwd, y), a->y, es);
    cl_arg_op(&c, CL_OP(norm_fwd, mean), mean, 4);
    cl_arg_op(&c, CL_OP(norm_fwd, rstd), a->rstd, 4);
    cl_arg_i64(&c, a->cols);
    cl_arg_f32(&c, a->eps);
    cl_arg_i32(&c, rms);
    cl_arg_i32(&c, cl_has(a->weight));
    cl_arg_i32(&c, cl_has(bias));
    cl_arg_i32(&c, cl_has(mean));
    cl_arg_i32(&c, cl_has(a->rstd));
    return cl_run_rows(&c, (size_t)a->rows);
}

/* dx per row, then dweight/dbias as column sums. */
kiln_status cl_norm_bwd(void *dev, const kiln_norm_args *a) {
    cl_dev *d = dev;
    int rms = a->rms;
    if (!cl_has(a->rstd) || (!rms && !cl_has(a->mean)))
        return kiln_set_error(KILN_ERR_ARGUMENT, "opencl: norm backward needs the saved mean/rstd");
    kiln_ref mean = rms ? (kiln_ref){.buf = NULL} : a->mean;
    size_t es = kiln_dtype_size(a->dtype); /* mean and rstd are f32 */
    kiln_status s = KILN_OK;
    if (cl_has(a->dx)) {
        cl_call c = cl_begin_dt(d, "norm", "norm_bwd_dx", a->dtype);
        cl_arg_op(&c, CL_OP(norm_bwd_dx, x), a->x, es);
        cl_arg_op(&c, CL_OP(norm_bwd_dx, w), a->weight, es);
        cl_arg_op(&c, CL_OP(norm_bwd_dx, mean), mean, 4);
        cl_arg_op(&c, CL_OP(norm_bwd_dx, rstd), a->rstd, 4);
        cl_arg_op(&c, CL_OP(norm_bwd_dx, dy), a->dy, es);
        cl_arg_op(&c, CL_OP(norm_bwd_dx, dx), a->dx, es);
        cl_arg_i64(&c, a->cols);
        cl_arg_i32(&c, cl_has(a->weight));
        cl_arg_i32(&c, rms);
        s = cl_run_rows(&c, (size_t)a->rows);
        if (s) return s;
    }
    if (cl_has(a->dweight) || cl_has(a->dbias)) {
        cl_call c = cl_begin_dt(d, "norm", "norm_bwd_params", a->dtype);
        cl_arg_op(&c, CL_OP(norm_bwd_params, x), a->x, es);
        cl_arg_op(&c, CL_OP(norm_bwd_params, mean), mean, 4);
        cl_arg_op(&c, CL_OP(norm_bwd_params, rstd), a->rstd, 4);
        cl_arg_op(&c, CL_OP(norm_bwd_params, dy), a->dy, es);
        cl_arg_op(&c, CL_OP(norm_bwd_params, dw), a->dweight, es);
        cl_arg_op(&c, CL_OP(norm_bwd_params, db), a->dbias, es);
        cl_arg_i64(&c, a->rows);
        cl_arg_i64(&c, a->cols);
        cl_arg_i32(&c, rms);
        cl_arg_i32(&c, cl_has(a->dweight));
        cl_arg_i32(&c, cl_has(a->dbias));
        s = cl_run_column_tiles(&c, a->cols);
    }
    return s;
}
