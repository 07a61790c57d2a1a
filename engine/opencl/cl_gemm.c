/* Host side of cl/gemm.cl: picks a variant, packs the operands, launches.
 *
 * Variant choice: kiln_set_gemm_variant or KILN_CL_GEMM=direct|cpu|tiled|gemv forces one (the
 * tests and `kiln verify` run every variant on every device; gemv where C has at most
 * KILN_ABI_GEMV_ROWS rows, the default choice elsewhere); otherwise products with at most
 * that many rows of C use gemv (cl_gemm_gemv.c), those of at most DIRECT_MAX multiply-adds per
 * matrix gemm_direct, larger ones the device's tuned variant (cl_gemm_tuning.c). */
#include <string.h>

#include "opencl/cl_gemm.h"

/* Below this many multiply-adds per matrix the three launches of pack+pack+compute cost
 * more than computing in place. */
#define DIRECT_MAX ((int64_t)48 * 48 * 48)
/* Packed copies of one batch chunk stay under this many bytes. */
#define PACK_BUDGET ((size_t)64 << 20)

static kiln_ref ref_plus(kiln_ref r, int64_t elements, size_t elem_size) {
    r.off += (size_t)elements * elem_size;
    return r;
}

/* The arguments every GEMM kernel takes for its output, in this order: C at `out` with its
 * batch stride, dtype and leading dimension, the optional bias, and the M x N extent
 * (gemm_store in cl/gemm.cl writes them); c_op and bias_op are the kernel's operands. */
static void arg_output(cl_call *c, const kiln_gemm_args *g, kiln_ref out, cl_operand c_op, cl_operand bias_op) {
    cl_arg_op(c, c_op, out, kiln_dtype_size(g->c_dtype));
    cl_arg_i64(c, g->stride_c);
    cl_arg_i32(c, (int)g->c_dtype);
    cl_arg_i64(c, g->ldc);
    cl_arg_op(c, bias_op, g->bias, 4);
    cl_arg_i32(c, cl_has(g->bias));
    cl_arg_i64(c, g->m);
    cl_arg_i64(c, g->n);
}

static kiln_status gemm_direct(cl_dev *d, const kiln_gemm_args *g) {
    size_t as = kiln_dtype_size(g->a_dtype), bs = kiln_dtype_size(g->b_dtype);
    cl_call c = cl_begin(d, "gemm", "gemm_direct");
    cl_arg_op(&c, CL_OP(gemm_direct, a), g->a, as);
    cl_arg_i64(&c, g->stride_a);
    cl_arg_i32(&c, (int)g->a_dtype);
    cl_arg_i32(&c, g->trans_a);
    cl_arg_i64(&c, g->lda);
    cl_arg_op(&c, CL_OP(gemm_direct, b), g->b, bs);
    cl_arg_i64(&c, g->stride_b);
    cl_arg_i32(&c, (int)g->b_dtype);
    cl_arg_i32(&c, g->trans_b);
    cl_arg_i64(&c, g->ldb);
    arg_output(&c, g, g->c, CL_OP(gemm_direct, c), CL_OP(gemm_direct, bias));
    cl_arg_i64(&c, g->k);
    cl_arg_f32(&c, g->alpha);
    cl_arg_f32(&c, g->beta);
    size_t global[3] = {(size_t)g->n, (size_t)g->m, (size_t)g->batch};
    size_t local[3] = {d->wg_elem < 16 ? d->wg_elem : 16, 1, 1};
    return cl_run(&c, 3, global, local);
}

/* Packs `count` matrices of op(X) into panels of width pw (see gemm_pack in cl/gemm.cl). */
static kiln_status pack_panels(cl_dev *d, kiln_ref src, kiln_dtype dtype, int64_t bstride,
                               int o_major, int64_t ld, int64_t outer, int64_t depth,
                               int64_t count, kiln_ref dst, int64_t dst_bstride, int pw,
                               int64_t kp, int blocked) {
    cl_call c = cl_begin(d, "gemm", blocked ? "gemm_pack_blocked" : "gemm_pack");
    cl_arg_op(&c, blocked ? CL_OP(gemm_pack_blocked, src) : CL_OP(gemm_pack, src), src, kiln_dtype_size(dtype));
    cl_arg_i64(&c, bstride);
    cl_arg_i32(&c, (int)dtype);
    cl_arg_i32(&c, o_major);
    cl_arg_i64(&c, ld);
    cl_arg_i64(&c, outer);
    cl_arg_i64(&c, depth);
    cl_arg_op(&c, blocked ? CL_OP(gemm_pack_blocked, dst) : CL_OP(gemm_pack, dst), dst, 4);
    cl_arg_i64(&c, dst_bstride);
    cl_arg_i32(&c, pw);
    cl_arg_i64(&c, kp);
    if (blocked) {
        size_t global[2] = {(size_t)((outer + pw - 1) / pw), (size_t)count}, local[2] = {1, 1};
        return cl_run(&c, 2, global, local);
    }
    size_t global[3] = {(size_t)kiln_round_up(outer, pw), (size_t)kp, (size_t)count};
    return cl_run(&c, 3, global, NULL);
}

/* The packed variants: per chunk of the batch, pack A and B (once when shared), compute. */
static kiln_status cl_gemm_packed(cl_dev *d, const kiln_gemm_args *g, int tiled) {
    const cl_gemm_config *t = &d->gemm;
    int pa = tiled ? t->tm : t->mr, pb = tiled ? t->tn : t->nr;
    int64_t kp = tiled ? kiln_round_up(g->k, t->kt) : g->k;
    int64_t mp = kiln_round_up(g->m, pa), np = kiln_round_up(g->n, pb);
    int64_t a_size = mp * kp, b_size = np * kp; /* floats per packed matrix */
    int a_shared = g->stride_a == 0, b_shared = g->stride_b == 0;
    size_t per_batch = (size_t)((a_shared ? 0 : a_size) + (b_shared ? 0 : b_size)) * 4;
    int64_t chunk = per_batch ? (int64_t)(PACK_BUDGET / per_batch) : g->batch;
    if (chunk < 1) chunk = 1;
    if (chunk > g->batch) chunk = g->batch;
    int64_t a_count = a_shared ? 1 : chunk, b_count = b_shared ? 1 : chunk;
    size_t a_bytes = (size_t)(a_size * a_count) * 4, b_bytes = (size_t)(b_size * b_count) * 4;
    kiln_buf *tmp;
    kiln_status s = cl_temp(d, a_bytes + b_bytes + CL_ALIGN, &tmp);
    if (s) return s;
    kiln_ref ap = {.buf = tmp};
    kiln_ref bp = {.buf = tmp, .off = (size_t)kiln_round_up((int64_t)a_bytes, CL_ALIGN)};
    size_t as = kiln_dtype_size(g->a_dtype), bs = kiln_dtype_size(g->b_dtype),
           cs = kiln_dtype_size(g->c_dtype);
    for (int64_t b0 = 0; s == KILN_OK && b0 < g->batch; b0 += chunk) {
        int64_t nb = g->batch - b0 < chunk ? g->batch - b0 : chunk;
        /* op(A) is M x K: A stored M x K is row (o) major; stored K x M (trans) is k major */
        if (!a_shared || b0 == 0)
            s = pack_panels(d, ref_plus(g->a, b0 * g->stride_a, as), g->a_dtype, g->stride_a,
                            !g->trans_a, g->lda, g->m, g->k, a_shared ? 1 : nb, ap, a_size, pa, kp,
                            !tiled);
        /* op(B) is K x N, panels over columns: B stored K x N is k major; N x K is o major */
        if (!s && (!b_shared || b0 == 0))
            s = pack_panels(d, ref_plus(g->b, b0 * g->stride_b, bs), g->b_dtype, g->stride_b,
                            g->trans_b, g->ldb, g->n, g->k, b_shared ? 1 : nb, bp, b_size, pb, kp,
                            !tiled);
        if (s) break;
        cl_call c = cl_begin(d, "gemm", tiled ? "gemm_tiled" : "gemm_cpu");
        cl_arg_op(&c, tiled ? CL_OP(gemm_tiled, ap) : CL_OP(gemm_cpu, ap), ap, 4);
        cl_arg_i64(&c, a_shared ? 0 : a_size);
        cl_arg_op(&c, tiled ? CL_OP(gemm_tiled, bp) : CL_OP(gemm_cpu, bp), bp, 4);
        cl_arg_i64(&c, b_shared ? 0 : b_size);
        cl_arg_i64(&c, kp);
        arg_output(&c, g, ref_plus(g->c, b0 * g->stride_c, cs), tiled ? CL_OP(gemm_tiled, c) : CL_OP(gemm_cpu, c),
                   tiled ? CL_OP(gemm_tiled, bias) : CL_OP(gemm_cpu, bias));
        cl_arg_f32(&c, g->alpha);
        cl_arg_f32(&c, g->beta);
        if (tiled) {
            size_t rx = (size_t)t->rx, ry = (size_t)t->ry;
            size_t global[3] = {(size_t)(np / pb) * rx, (size_t)(mp / pa) * ry, (size_t)nb};
            size_t local[3] = {rx, ry, 1};
            s = cl_run(&c, 3, global, local);
        } else {
            size_t global[3] = {(size_t)(mp / pa), (size_t)(np / pb), (size_t)nb};
            size_t local[3] = {1, 1, 1};
            s = cl_run(&c, 3, global, local);
        }
    }
    cl_free(d, tmp); /* safe: see cl_temp */
    return s;
}

static const char *const VARIANT_NAMES[] = {"direct", "cpu", "tiled", "gemv"};
enum { N_VARIANTS = (int)(sizeof VARIANT_NAMES / sizeof VARIANT_NAMES[0]) };

/* Every variant runs on every device (the tuned choice is about speed alone). */
int cl_gemm_variants(void *dev, const char **names, int cap) {
    (void)dev;
    int n = 0;
    for (; n < N_VARIANTS && n < cap; n++) names[n] = VARIANT_NAMES[n];
    return n;
}

kiln_status cl_set_gemm_variant(void *dev, const char *name) {
    cl_dev *d = dev;
    d->gemm_force = d->gemm_env;
    if (!name || !*name) return KILN_OK;
    for (int v = 0; v < N_VARIANTS; v++)
        if (!strcmp(name, VARIANT_NAMES[v])) {
            d->gemm_force = VARIANT_NAMES[v];
            return KILN_OK;
        }
    return kiln_set_error(KILN_ERR_ARGUMENT, "opencl: no GEMM variant %s (direct, cpu, tiled, gemv)", name);
}

kiln_status cl_gemm(void *dev, const kiln_gemm_args *g) {
    cl_dev *d = dev;
    if (g->m <= 0 || g->n <= 0 || g->batch <= 0) return KILN_OK;
    if (g->c_dtype == KILN_I32 || g->a_dtype == KILN_I32 || g->b_dtype == KILN_I32)
        return kiln_set_error(KILN_ERR_DTYPE, "opencl gemm: operands must be f32 or f16");
    const char *variant = d->gemm_force;
    if (variant && !strcmp(variant, "gemv") && !cl_gemv_applies(g)) variant = NULL; /* the default choice */
    if (!variant)
        variant = cl_gemv_applies(g) ? "gemv" : g->m * g->n * g->k <= DIRECT_MAX ? "direct" : d->gemm.variant;
    if (!strcmp(variant, "gemv")) return cl_gemm_gemv(d, g);
    if (!strcmp(variant, "direct")) return gemm_direct(d, g);
    if (!strcmp(variant, "cpu")) return cl_gemm_packed(d, g, 0);
    if (!strcmp(variant, "tiled")) return cl_gemm_packed(d, g, 1);
    return kiln_set_error(KILN_ERR_ARGUMENT, "KILN_CL_GEMM=%s: expected direct, cpu, tiled or gemv", variant);
}
