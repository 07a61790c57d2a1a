/* Host side of the kernels that fit no larger family, as in the CPU backend's cpu_misc.c:
 * the sinusoidal position table (cl/shape.cl) and the inf/NaN check behind dynamic loss
 * scaling (cl/reduce.cl). */
#include "opencl/cl_internal.h"

kiln_status cl_sinusoid(void *dev, const kiln_sinusoid_args *a) {
    cl_dev *d = dev;
    cl_call c = cl_begin_dt(d, "shape", "sinusoid", a->dtype);
    cl_arg_ref(&c, a->out, kiln_dtype_size(a->dtype));
    cl_arg_i64(&c, a->channels);
    size_t global[2] = {(size_t)a->channels, (size_t)a->positions}, local[2] = {d->wg_elem, 1};
    return cl_run(&c, 2, global, local);
}

kiln_status cl_check_finite(void *dev, const kiln_finite_args *a) {
    cl_dev *d = dev;
    cl_call c = cl_begin(d, "reduce", "check_finite");
    cl_arg_ref(&c, a->x, kiln_dtype_size(a->dtype));
    cl_arg_i64(&c, a->n);
    cl_arg_i32(&c, (int)a->dtype);
    cl_arg_ref(&c, a->flag, 4);
    return cl_run_rows(&c, cl_groups_for(d, (size_t)a->n));
}
