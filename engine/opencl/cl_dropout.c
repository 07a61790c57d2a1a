/* Host side of cl/dropout.cl: inverted dropout whose mask the kernels regenerate from
 * (seed, stream, element index), so the backward needs no stored mask. */
#include "opencl/cl_internal.h"

static kiln_status cl_dropout(cl_dev *d, const char *name, kiln_ref in, kiln_ref out,
                              const kiln_dropout_args *a) {
    size_t es = kiln_dtype_size(a->dtype);
    cl_call c = cl_begin_dt(d, "dropout", name, a->dtype);
    /* dropout_bwd takes its dy and dx at dropout_fwd's x and y (core/kernel_slots.def) */
    cl_arg_op(&c, CL_OP(dropout_fwd, x), in, es);
    cl_arg_op(&c, CL_OP(dropout_fwd, y), out, es);
    cl_arg_i64(&c, a->n);
    cl_arg_f32(&c, a->prob);
    cl_arg_u64(&c, a->seed);
    cl_arg_u64(&c, a->stream);
    return cl_run_1d(&c, (size_t)a->n);
}

kiln_status cl_dropout_fwd(void *dev, const kiln_dropout_args *a) {
    return cl_dropout(dev, "dropout_fwd", a->x, a->y, a);
}
kiln_status cl_dropout_bwd(void *dev, const kiln_dropout_args *a) {
    return cl_dropout(dev, "dropout_bwd", a->dy, a->dx, a);
}
