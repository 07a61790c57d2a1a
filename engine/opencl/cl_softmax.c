/* Host side of cl/softmax.cl: the masked attention softmax, forward and backward, one
 * work-group per row. */
#include "opencl/cl_internal.h"

kiln_status cl_softmax_fwd(void *dev, const kiln_softmax_args *a) {
    size_t es = kiln_dtype_size(a->dtype);
    cl_call c = cl_begin_dt(dev, "softmax", "softmax_fwd", a->dtype);
    cl_arg_op(&c, CL_OP(softmax_fwd, x), a->x, es);
    cl_arg_op(&c, CL_OP(softmax_fwd, add), a->add, es);
    cl_arg_op(&c, CL_OP(softmax_fwd, lengths), a->lengths, 4);
    cl_arg_op(&c, CL_OP(softmax_fwd, y), a->y, es);
    cl_arg_i64(&c, a->heads);
    cl_arg_i64(&c, a->tq);
    cl_arg_i64(&c, a->tk);
    cl_arg_f32(&c, a->scale);
    cl_arg_f32(&c, 1.0f / a->temperature);
    cl_arg_i32(&c, a->causal);
    cl_arg_i32(&c, cl_has(a->add));
    cl_arg_i32(&c, cl_has(a->lengths));
    return cl_run_rows(&c, (size_t)(a->batch * a->heads * a->tq));
}

kiln_status cl_softmax_bwd(void *dev, const kiln_softmax_args *a) {
    if (!cl_has(a->dx) && !cl_has(a->dadd)) return KILN_OK;
    size_t es = kiln_dtype_size(a->dtype);
    cl_call c = cl_begin_dt(dev, "softmax", "softmax_bwd", a->dtype);
    cl_arg_op(&c, CL_OP(softmax_bwd, y), a->y, es);
    cl_arg_op(&c, CL_OP(softmax_bwd, dy), a->dy, es);
    cl_arg_op(&c, CL_OP(softmax_bwd, dx), a->dx, es);
    cl_arg_op(&c, CL_OP(softmax_bwd, dadd), a->dadd, es);
    cl_arg_i64(&c, a->tk);
    cl_arg_f32(&c, a->scale * (1.0f / a->temperature)); /* the CPU's rounding */
    cl_arg_f32(&c, 1.0f / a->temperature);
    cl_arg_i32(&c, cl_has(a->dx));
    cl_arg_i32(&c, cl_has(a->dadd));
    return cl_run_rows(&c, (size_t)(a->batch * a->heads * a->tq));
}
