/* Host side of cl/smul.cl: y = s * x and dx += s * dy. */
#include "opencl/cl_internal.h"

kiln_status cl_smul_fwd(void *dev, const kiln_smul_args *a) {
    size_t es = kiln_dtype_size(a->dtype);
    cl_call c = cl_begin_dt(dev, "smul", "smul_fwd", a->dtype);
    cl_arg_op(&c, CL_OP(smul_fwd, x), a->x, es);
    cl_arg_op(&c, CL_OP(smul_fwd, y), a->y, es);
    cl_arg_i64(&c, a->n);
    cl_arg_f32(&c, a->s);
    return cl_run_1d(&c, (size_t)a->n);
}

kiln_status cl_smul_bwd(void *dev, const kiln_smul_args *a) {
    size_t es = kiln_dtype_size(a->dtype);
    cl_call c = cl_begin_dt(dev, "smul", "smul_bwd", a->dtype);
    cl_arg_op(&c, CL_OP(smul_bwd, dy), a->dy, es);
    cl_arg_op(&c, CL_OP(smul_bwd, dx), a->dx, es);
    cl_arg_i64(&c, a->n);
    cl_arg_f32(&c, a->s);
    return cl_run_1d(&c, (size_t)a->n);
}
