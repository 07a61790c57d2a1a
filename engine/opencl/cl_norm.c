/* Host side of cl/layernorm.cl: LayerNorm and RMSNorm, forward and backward. The operands
 * are in the args' dtype (the f16 or f32 variant of the family), mean and rstd in f32. */
#include "opencl/cl_internal.h"

kiln_status cl_layernorm_fwd(void *dev, const kiln_norm_args *a) {
    size_t es = kiln_dtype_size(a->dtype);
    cl_call c = cl_begin_dt(dev, "layernorm", "layernorm_fwd", a->dtype);
    cl_arg_ref(&c, a->x, es);
    cl_arg_ref(&c, a->weight, es);
    cl_arg_ref(&c, a->bias, es);
    cl_arg_ref(&c, a->y, es);
    cl_arg_ref(&c, a->mean, 4);
    cl_arg_ref(&c, a->rstd, 4);
    cl_arg_i64(&c, a->cols);
    cl_arg_f32(&c, a->eps);
    cl_arg_i32(&c, cl_has(a->weight));
    cl_arg_i32(&c, cl_has(a->bias));
    cl_arg_i32(&c, cl_has(a->mean));
    cl_arg_i32(&c, cl_has(a->rstd));
    return cl_run_rows(&c, (size_t)a->rows);
}

kiln_status cl_rmsnorm_fwd(void *dev, const kiln_norm_args *a) {
    size_t es = kiln_dtype_size(a->dtype);
    cl_call c = cl_begin_dt(dev, "layernorm", "rmsnorm_fwd", a->dtype);
    cl_arg_ref(&c, a->x, es);
    cl_arg_ref(&c, a->weight, es);
    cl_arg_ref(&c, a->y, es);
    cl_arg_ref(&c, a->rstd, 4);
    cl_arg_i64(&c, a->cols);
    cl_arg_f32(&c, a->eps);
    cl_arg_i32(&c, cl_has(a->weight));
    cl_arg_i32(&c, cl_has(a->rstd));
    return cl_run_rows(&c, (size_t)a->rows);
}

/* dx per row, then dweight/dbias as column sums; `layer` selects LayerNorm (uses mean). */
static kiln_status norm_bwd(cl_dev *d, const kiln_norm_args *a, int layer) {
    if (!cl_has(a->rstd) || (layer && !cl_has(a->mean)))
        return kiln_set_error(KILN_ERR_ARGUMENT, "opencl: norm backward needs the saved mean/rstd");
    kiln_ref mean = layer ? a->mean : (kiln_ref){0, 0};
    size_t es = kiln_dtype_size(a->dtype); /* mean and rstd are f32 */
    kiln_status s = KILN_OK;
    if (cl_has(a->dx)) {
        cl_call c = cl_begin_dt(d, "layernorm", "norm_bwd_dx", a->dtype);
        cl_arg_ref(&c, a->x, es);
        cl_arg_ref(&c, a->weight, es);
        cl_arg_ref(&c, mean, 4);
        cl_arg_ref(&c, a->rstd, 4);
        cl_arg_ref(&c, a->dy, es);
        cl_arg_ref(&c, a->dx, es);
        cl_arg_i64(&c, a->cols);
        cl_arg_i32(&c, cl_has(a->weight));
        cl_arg_i32(&c, layer);
        s = cl_run_rows(&c, (size_t)a->rows);
        if (s) return s;
    }
    if (cl_has(a->dweight) || cl_has(a->dbias)) {
        size_t cols_per_group = d->wg < 32 ? d->wg : 32; /* NP_COLS in cl/layernorm.cl */
        cl_call c = cl_begin_dt(d, "layernorm", "norm_bwd_params", a->dtype);
        cl_arg_ref(&c, a->x, es);
        cl_arg_ref(&c, mean, 4);
        cl_arg_ref(&c, a->rstd, 4);
        cl_arg_ref(&c, a->dy, es);
        cl_arg_ref(&c, a->dweight, es);
        cl_arg_ref(&c, a->dbias, es);
        cl_arg_i64(&c, a->rows);
        cl_arg_i64(&c, a->cols);
        cl_arg_i32(&c, layer);
        cl_arg_i32(&c, cl_has(a->dweight));
        cl_arg_i32(&c, cl_has(a->dbias));
        s = cl_run_rows(&c, ((size_t)a->cols + cols_per_group - 1) / cols_per_group);
    }
    return s;
}

kiln_status cl_layernorm_bwd(void *dev, const kiln_norm_args *a) { return norm_bwd(dev, a, 1); }
kiln_status cl_rmsnorm_bwd(void *dev, const kiln_norm_args *a) { return norm_bwd(dev, a, 0); }
