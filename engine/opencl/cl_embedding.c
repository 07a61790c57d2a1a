/* Host side of cl/embedding.cl: the row gather and its scatter-add backward. Bad ids are
 * reported through the device error flag. */
#include "opencl/cl_internal.h"

kiln_status cl_embed_fwd(void *dev, const kiln_embed_args *a) {
    cl_dev *d = dev;
    size_t es = kiln_dtype_size(a->dtype);
    cl_call c = cl_begin_dt(d, "embedding", "embed_fwd", a->dtype);
    cl_arg_op(&c, CL_OP(embed_fwd, table), a->table, es);
    cl_arg_op(&c, CL_OP(embed_fwd, ids), a->ids, 4);
    cl_arg_op(&c, CL_OP(embed_fwd, out), a->out, es);
    cl_arg_op(&c, CL_OP(embed_fwd, err), a->err_flag, 4);
    cl_arg_i64(&c, a->vocab);
    cl_arg_i64(&c, a->dim);
    cl_arg_i32(&c, cl_has(a->err_flag));
    size_t global[2] = {(size_t)a->dim, (size_t)a->rows}, local[2] = {d->wg_elem, 1};
    return cl_run(&c, 2, global, local);
}

/* The f16 backward's f32 scratch (embed_bwd_widened in cl/embedding.cl) holds a block of
 * columns of the whole table; blocks are sized to stay under this. */
#define EMBED_WIDE_BUDGET ((size_t)16 << 20)

static kiln_status embed_bwd_widened(cl_dev *d, const kiln_embed_args *a) {
    size_t per_column = (size_t)a->vocab * sizeof(float);
    int64_t width = (int64_t)(EMBED_WIDE_BUDGET / (per_column ? per_column : 1));
    if (width < 1) width = 1;
    if (width > a->dim) width = a->dim;
    kiln_buf *tmp;
    kiln_status s = cl_temp(d, (size_t)width * per_column, &tmp);
    if (s) return s;
    kiln_ref wide = {.buf = tmp};
    for (int64_t c0 = 0; s == KILN_OK && c0 < a->dim; c0 += width) {
        cl_call c = cl_begin_dt(d, "embedding", "embed_bwd_widened", KILN_F16);
        cl_arg_op(&c, CL_OP(embed_bwd_widened, ids), a->ids, 4);
        cl_arg_op(&c, CL_OP(embed_bwd_widened, dout), a->dout, 2);
        cl_arg_op(&c, CL_OP(embed_bwd_widened, dtable), a->dtable, 2);
        cl_arg_op(&c, CL_OP(embed_bwd_widened, wide), wide, 4);
        cl_arg_i64(&c, a->rows);
        cl_arg_i64(&c, a->vocab);
        cl_arg_i64(&c, a->dim);
        cl_arg_i64(&c, c0);
        cl_arg_i64(&c, width);
        s = cl_run_1d(&c, (size_t)width);
    }
    cl_free(d, tmp); /* safe: see cl_temp */
    return s;
}

kiln_status cl_embed_bwd(void *dev, const kiln_embed_args *a) {
    if (a->dtype == KILN_F16) return embed_bwd_widened(dev, a);
    cl_call c = cl_begin_dt(dev, "embedding", "embed_bwd", a->dtype);
    cl_arg_op(&c, CL_OP(embed_bwd, ids), a->ids, 4);
    cl_arg_op(&c, CL_OP(embed_bwd, dout), a->dout, 4);
    cl_arg_op(&c, CL_OP(embed_bwd, dtable), a->dtable, 4);
    cl_arg_i64(&c, a->rows);
    cl_arg_i64(&c, a->vocab);
    cl_arg_i64(&c, a->dim);
    return cl_run_1d(&c, (size_t)a->dim);
}
