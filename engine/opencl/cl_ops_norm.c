/* Host side of cl/layernorm.cl: LayerNorm and RMSNorm, forward and backward. */
#include "opencl/cl_internal.h"

kiln_status cl_layernorm_fwd(void *dev, const kiln_norm_args *a) {
    cl_call c = cl_begin(dev, "layernorm", "layernorm_fwd");
    cl_arg_ref(&c, a->x, 4);
    cl_arg_ref(&c, a->weight, 4);
    cl_arg_ref(&c, a->bias, 4);
    cl_arg_ref(&c, a->y, 4);
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
    cl_call c = cl_begin(dev, "layernorm", "rmsnorm_fwd");
    cl_arg_ref(&c, a->x, 4);
    cl_arg_ref(&c, a->weight, 4);
    cl_arg_ref(&c, a->y, 4);
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
    kiln_status s = KILN_OK;
    if (cl_has(a->dx)) {
        cl_call c = cl_begin(d, "layernorm", "norm_bwd_dx");
        cl_arg_ref(&c, a->x, 4);
        cl_arg_ref(&c, a->weight, 4);
        cl_arg_ref(&c, mean, 4);
        cl_arg_ref(&c, a->rstd, 4);
        cl_arg_ref(&c, a->dy, 4);
        cl_arg_ref(&c, a->dx, 4);
        cl_arg_i64(&c, a->cols);
        cl_arg_i32(&c, cl_has(a->weight));
        cl_arg_i32(&c, layer);
        s = cl_run_rows(&c, (size_t)a->rows);
        if (s) return s;
    }
    if (cl_has(a->dweight) || cl_has(a->dbias)) {
        size_t cols_per_group = d->wg < 32 ? d->wg : 32; /* NP_COLS in cl/layernorm.cl */
        cl_call c = cl_begin(d, "layernorm", "norm_bwd_params");
        cl_arg_ref(&c, a->x, 4);
        cl_arg_ref(&c, mean, 4);
        cl_arg_ref(&c, a->rstd, 4);
        cl_arg_ref(&c, a->dy, 4);
        cl_arg_ref(&c, a->dweight, 4);
        cl_arg_ref(&c, a->dbias, 4);
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
