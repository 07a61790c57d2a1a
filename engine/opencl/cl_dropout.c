/* Host side of cl/dropout.cl: inverted dropout whose mask the kernels regenerate from
 * (seed, stream, element index), so the backward needs no stored mask. */
#include "opencl/cl_internal.h"

/* One launch for both kernels: they differ only in their operands (the caller's, in the
 * kernel's declared order, so that each kernel's own parameter indices are checked). */
static kiln_status cl_dropout(cl_dev *d, const char *name, cl_operand in_op, kiln_ref in, cl_operand out_op,
                              kiln_ref out, const kiln_dropout_args *a) {
    size_t es = kiln_dtype_size(a->dtype);
    cl_call c = cl_begin_dt(d, "dropout", name, a->dtype);
    cl_arg_op(&c, in_op, in, es);
    cl_arg_op(&c, out_op, out, es);
    cl_arg_i64(&c, a->n);
    cl_arg_f32(&c, a->prob);
    cl_arg_u64(&c, a->seed);
    cl_arg_u64(&c, a->stream);
    return cl_run_1d(&c, (size_t)a->n);
}

kiln_status cl_dropout_fwd(void *dev, const kiln_dropout_args *a) {
    return cl_dropout(dev, "dropout_fwd", CL_OP(dropout_fwd, x), a->x, CL_OP(dropout_fwd, y), a->y, a);
}
kiln_status cl_dropout_bwd(void *dev, const kiln_dropout_args *a) {
    return cl_dropout(dev, "dropout_bwd", CL_OP(dropout_bwd, dy), a->dy, CL_OP(dropout_bwd, dx), a->dx, a);
}
