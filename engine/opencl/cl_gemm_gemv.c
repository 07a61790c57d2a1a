/* Host side of cl/gemm.cl's gemv kernels: the GEMM for at most KILN_ABI_GEMV_ROWS rows of C
 * (a decoded token's products), which cl_gemm.c picks for every such product ("gemv").
 *
 * Work-groups, by device class:
 *  - CPU devices (PoCL): one work-item per group, so that PoCL runs each work-item's 8-wide
 *    vectors along K (a group of several work-items is vectorized across them: gathers from
 *    several rows of B). n x k B: a work-item per GV_CPU_ROWS rows of B, one after another,
 *    reading each along K; k x n B: a work-item per 32 columns (GV_NN_CHUNKS in cl/gemm.cl),
 *    walking all of K.
 *  - GPUs: 64 work-items. n x k B: 32 lanes per row (8 elements each, 256 contiguous bytes
 *    per step of an f32 row), 2 rows per group; k x n B: 8 chunks of 8 columns by 8 slices
 *    of K (each step reads 8 rows of B, 256 bytes of each). */
#include "opencl/cl_gemm.h"

#define GV_CPU_ROWS 16

int cl_gemv_applies(const kiln_gemm_args *g) { return g->m >= 1 && g->m <= KILN_ABI_GEMV_ROWS && g->k > 0; }

kiln_status cl_gemm_gemv(cl_dev *d, const kiln_gemm_args *g) {
    int cpu = d->is_cpu && !d->is_gpu;
    size_t as = kiln_dtype_size(g->a_dtype), bs = kiln_dtype_size(g->b_dtype);
    const char *kernel = g->trans_b ? "gemm_gemv_nt" : "gemm_gemv_nn";
    cl_call c = cl_begin(d, "gemm", kernel);
    cl_arg_op(&c, g->trans_b ? CL_OP(gemm_gemv_nt, a) : CL_OP(gemm_gemv_nn, a), g->a, as);
    cl_arg_i64(&c, g->stride_a);
    cl_arg_i32(&c, (int)g->a_dtype);
    cl_arg_i32(&c, g->trans_a);
    cl_arg_i64(&c, g->lda);
    cl_arg_op(&c, g->trans_b ? CL_OP(gemm_gemv_nt, b) : CL_OP(gemm_gemv_nn, b), g->b, bs);
    cl_arg_i64(&c, g->stride_b);
    cl_arg_i32(&c, (int)g->b_dtype);
    cl_arg_i64(&c, g->ldb);
    cl_arg_op(&c, g->trans_b ? CL_OP(gemm_gemv_nt, c) : CL_OP(gemm_gemv_nn, c), g->c, kiln_dtype_size(g->c_dtype));
    cl_arg_i64(&c, g->stride_c);
    cl_arg_i32(&c, (int)g->c_dtype);
    cl_arg_i64(&c, g->ldc);
    cl_arg_op(&c, g->trans_b ? CL_OP(gemm_gemv_nt, bias) : CL_OP(gemm_gemv_nn, bias), g->bias, 4);
    cl_arg_i32(&c, cl_has(g->bias));
    cl_arg_i64(&c, g->m);
    cl_arg_i64(&c, g->n);
    cl_arg_i64(&c, g->k);
    cl_arg_f32(&c, g->alpha);
    cl_arg_f32(&c, g->beta);
    size_t wg = d->wg < 64 ? d->wg : 64; /* d->wg: a power of 2 */
    if (g->trans_b) {
        size_t lanes = cpu ? 1 : (wg < 32 ? wg : 32), rows = cpu ? 1 : wg / lanes;
        int per_item = cpu ? GV_CPU_ROWS : 1;
        cl_arg_i32(&c, per_item);
        size_t blocks = ((size_t)g->n + rows * (size_t)per_item - 1) / (rows * (size_t)per_item);
        size_t global[3] = {lanes, blocks * rows, (size_t)g->batch}, local[3] = {lanes, rows, 1};
        return cl_run(&c, 3, global, local);
    }
    size_t per_item = cpu ? 32 : 8; /* columns: GV_NN_CHUNKS chunks of 8 */
    size_t chunks = ((size_t)g->n + per_item - 1) / per_item, x = cpu ? 1 : (wg < 8 ? wg : 8), slices = cpu ? 1 : wg / x;
    size_t global[3] = {(chunks + x - 1) / x * x, slices, (size_t)g->batch}, local[3] = {x, slices, 1};
    return cl_run(&c, 3, global, local);
}
