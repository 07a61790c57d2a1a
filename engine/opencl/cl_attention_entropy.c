/* Host side of cl/attention_entropy.cl: the entropy of attention probabilities per head. */
#include "opencl/cl_internal.h"

kiln_status cl_entropy_fwd(void *dev, const kiln_entropy_args *a) {
    cl_dev *d = dev;
    int64_t per_head = a->tq * a->tk;
    /* spread each head over enough groups to fill the device, but not more */
    size_t groups = cl_groups_for(d, (size_t)(a->batch * per_head));
    groups = (groups + (size_t)a->heads - 1) / (size_t)a->heads;
    if (groups < 1) groups = 1;
    kiln_buf *tmp;
    kiln_status s = cl_temp(d, groups * (size_t)a->heads * sizeof(float), &tmp);
    if (s) return s;
    kiln_ref partial = {.buf = tmp};
    cl_call c = cl_begin_dt(d, "attention_entropy", "entropy_partial", a->dtype);
    cl_arg_op(&c, CL_OP(entropy_partial, p), a->p, kiln_dtype_size(a->dtype));
    cl_arg_i64(&c, a->batch);
    cl_arg_i64(&c, a->heads);
    cl_arg_i64(&c, per_head);
    cl_arg_op(&c, CL_OP(entropy_partial, partial), partial, 4);
    size_t global[2] = {groups * d->wg, (size_t)a->heads}, local[2] = {d->wg, 1};
    s = cl_run(&c, 2, global, local);
    if (!s) {
        c = cl_begin(d, "attention_entropy", "entropy_final");
        cl_arg_op(&c, CL_OP(entropy_final, partial), partial, 4);
        cl_arg_i32(&c, (int)groups);
        cl_arg_op(&c, CL_OP(entropy_final, out), a->out, 4);
        cl_arg_f32(&c, 1.0f / (float)(a->batch * a->tq));
        s = cl_run_rows(&c, (size_t)a->heads);
    }
    cl_free(d, tmp); /* safe: see cl_temp */
    return s;
}

kiln_status cl_entropy_bwd(void *dev, const kiln_entropy_args *a) {
    cl_dev *d = dev;
    int64_t per_head = a->tq * a->tk;
    size_t es = kiln_dtype_size(a->dtype);
    cl_call c = cl_begin_dt(d, "attention_entropy", "entropy_bwd", a->dtype);
    cl_arg_op(&c, CL_OP(entropy_bwd, p), a->p, es);
    cl_arg_op(&c, CL_OP(entropy_bwd, dout), a->dout, 4);
    cl_arg_op(&c, CL_OP(entropy_bwd, dp), a->dp, es);
    cl_arg_i64(&c, per_head);
    cl_arg_f32(&c, 1.0f / (float)(a->batch * a->tq));
    /* dims 1 and 2 exactly heads and batch (the kernel reads heads as the global size) */
    size_t global[3] = {(size_t)per_head, (size_t)a->heads, (size_t)a->batch};
    size_t local[3] = {d->wg_elem, 1, 1};
    return cl_run(&c, 3, global, global[0] >= d->wg_elem ? local : NULL);
}
