/* Host side of cl/activation.cl: y = f(x) and dx += dy * f'(x), one kernel per kind and
 * direction (the kind is a compile-time constant in each, see the .cl file). */
#include "opencl/cl_internal.h"

/* The kernel of an activation kind (kiln_act, or KILN_ACT_SQRT forward only). */
static const char *act_kernel(int kind, int backward) {
    switch (kind) {
    case KILN_ACT_GELU: return backward ? "gelu_bwd" : "gelu_fwd";
    case KILN_ACT_RELU: return backward ? "relu_bwd" : "relu_fwd";
    case KILN_ACT_SILU: return backward ? "silu_bwd" : "silu_fwd";
    case KILN_ACT_RELU2: return backward ? "relu2_bwd" : "relu2_fwd";
    case KILN_ACT_SQRT: return backward ? NULL : "sqrt_fwd";
    }
    return NULL;
}

kiln_status cl_act_fwd(void *dev, const kiln_act_args *a) {
    const char *name = act_kernel(a->kind, 0);
    if (!name) return kiln_set_error(KILN_ERR_ARGUMENT, "opencl act_fwd: unknown activation kind %d", a->kind);
    size_t es = kiln_dtype_size(a->dtype);
    cl_call c = cl_begin_dt(dev, "activation", name, a->dtype);
    cl_arg_op(&c, CL_OP(ACT_FWD, x), a->x, es);
    cl_arg_op(&c, CL_OP(ACT_FWD, y), a->y, es);
    cl_arg_i64(&c, a->n);
    return cl_run_1d(&c, (size_t)a->n);
}

kiln_status cl_act_bwd(void *dev, const kiln_act_args *a) {
    const char *name = act_kernel(a->kind, 1);
    if (!name)
        return kiln_set_error(KILN_ERR_ARGUMENT, "opencl act_bwd: activation kind %d has no backward", a->kind);
    size_t es = kiln_dtype_size(a->dtype);
    cl_call c = cl_begin_dt(dev, "activation", name, a->dtype);
    cl_arg_op(&c, CL_OP(ACT_BWD, x), a->x, es);
    cl_arg_op(&c, CL_OP(ACT_BWD, dy), a->dy, es);
    cl_arg_op(&c, CL_OP(ACT_BWD, dx), a->dx, es);
    cl_arg_i64(&c, a->n);
    return cl_run_1d(&c, (size_t)a->n);
}
