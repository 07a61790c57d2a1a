/* Host side of cl/cross_entropy.cl: the loss from logits and i32 targets, forward (rows, then
 * their total) and backward. Bad targets are reported through the device error flag. */
#include "opencl/cl_internal.h"

kiln_status cl_xent_fwd(void *dev, const kiln_xent_args *a) {
    cl_dev *d = dev;
    kiln_buf *tmp;
    kiln_status s = cl_temp(d, (size_t)a->rows * KILN_ABI_CL_XENT_ROW_FLOATS * sizeof(float), &tmp);
    if (s) return s;
    kiln_ref rows = {.buf = tmp};
    cl_call c = cl_begin_dt(d, "cross_entropy", "xent_rows", a->dtype);
    cl_arg_op(&c, CL_OP(xent_rows, logits), a->logits, kiln_dtype_size(a->dtype));
    cl_arg_op(&c, CL_OP(xent_rows, targets), a->targets, 4);
    cl_arg_op(&c, CL_OP(xent_rows, lse), a->lse, 4);
    cl_arg_op(&c, CL_OP(xent_rows, row_loss), rows, 4);
    cl_arg_op(&c, CL_OP(xent_rows, err), a->err_flag, 4);
    cl_arg_i64(&c, a->vocab);
    cl_arg_f32(&c, a->smoothing);
    cl_arg_i32(&c, a->ignore_index);
    cl_arg_i32(&c, cl_has(a->err_flag));
    s = cl_run_rows(&c, (size_t)a->rows);
    if (!s) {
        c = cl_begin(d, "cross_entropy", "xent_total");
        cl_arg_op(&c, CL_OP(xent_total, row_loss), rows, 4);
        cl_arg_i64(&c, a->rows);
        cl_arg_op(&c, CL_OP(xent_total, loss), a->loss, 4);
        cl_arg_op(&c, CL_OP(xent_total, count), a->count, 4);
        cl_arg_i32(&c, cl_has(a->count));
        s = cl_run_rows(&c, 1);
    }
    cl_free(d, tmp); /* safe: see cl_temp */
    return s;
}

kiln_status cl_xent_bwd(void *dev, const kiln_xent_args *a) {
    cl_dev *d = dev;
    size_t es = kiln_dtype_size(a->dtype);
    cl_call c = cl_begin_dt(d, "cross_entropy", "xent_bwd", a->dtype);
    cl_arg_op(&c, CL_OP(xent_bwd, logits), a->logits, es);
    cl_arg_op(&c, CL_OP(xent_bwd, targets), a->targets, 4);
    cl_arg_op(&c, CL_OP(xent_bwd, lse), a->lse, 4);
    cl_arg_op(&c, CL_OP(xent_bwd, count), a->count, 4);
    cl_arg_op(&c, CL_OP(xent_bwd, dloss), a->dloss, 4);
    cl_arg_op(&c, CL_OP(xent_bwd, dlogits), a->dlogits, es);
    cl_arg_i64(&c, a->vocab);
    cl_arg_f32(&c, a->smoothing);
    cl_arg_i32(&c, a->ignore_index);
    size_t global[2] = {(size_t)a->vocab, (size_t)a->rows}, local[2] = {d->wg_elem, 1};
    return cl_run(&c, 2, global, local);
}
