/* Host side of the reduction to a scalar in cl/reduce.cl: sum or sum of squares, in two
 * passes (per-group partial sums, then one group adds them). */
#include "opencl/cl_internal.h"

kiln_status cl_reduce(void *dev, const kiln_reduce_args *a) {
    cl_dev *d = dev;
    size_t groups = cl_groups_for(d, (size_t)a->n);
    kiln_buf *tmp;
    kiln_status s = cl_temp(d, groups * sizeof(float), &tmp);
    if (s) return s;
    kiln_ref partial = {.buf = tmp};
    cl_call c = cl_begin_dt(d, "reduce", "reduce_partial", a->dtype);
    cl_arg_op(&c, CL_OP(reduce_partial, x), a->x, kiln_dtype_size(a->dtype));
    cl_arg_i64(&c, a->n);
    cl_arg_i32(&c, a->square);
    cl_arg_op(&c, CL_OP(reduce_partial, partial), partial, 4);
    s = cl_run_rows(&c, groups);
    if (!s) {
        c = cl_begin(d, "reduce", "reduce_final");
        cl_arg_op(&c, CL_OP(reduce_final, partial), partial, 4);
        cl_arg_i32(&c, (int)groups);
        cl_arg_op(&c, CL_OP(reduce_final, out), a->out, 4);
        cl_arg_f32(&c, a->alpha);
        cl_arg_i32(&c, a->square);
        s = cl_run_rows(&c, 1);
    }
    cl_free(d, tmp); /* safe: see cl_temp */
    return s;
}
