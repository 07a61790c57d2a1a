/* The verification cases of the product with a block-quantized matrix (kiln/quant.h): run by
 * `kiln verify` and by tests/test_op_quant.c. The case quantizes its weight input on the host
 * and multiplies on the device, so the device's kernel meets the CPU's on the same blocks;
 * tests/test_op_quant.c also checks both against dequantize-then-multiply. The transposed
 * product (kiln_matmul_qt, the gradient of x through the quantized product) has cases of its
 * own: the quantized weights get no gradient, and the CPU's product rounds x to 8 bits, so a
 * finite difference of it in x would not be its gradient. */
#include <stdlib.h>

#include "kiln/kiln.h"
#include "verify/cases.h"

/* The weight w [n, k] quantized on the host in format *param and uploaded; NULL with the
 * error set on failure. */
static kiln_qmatrix *quantized(kiln_tensor *w, const void *param) {
    int64_t n = w->shape[0], k = w->shape[1];
    float *host = malloc((size_t)(n * k) * sizeof *host);
    kiln_qmatrix *q = kiln_qmatrix_new(w->ctx, *(const kiln_qformat *)param, n, k);
    if (!host) kiln_set_error(KILN_ERR_MEMORY, "out of host memory");
    if (!host || !q || kiln_download_f32(w, host, n * k) || kiln_qmatrix_quantize(q, host, 0)) {
        kiln_qmatrix_free(q);
        q = NULL;
    }
    free(host);
    return q;
}

/* in[0] x [.., k], in[1] the weight [n, k] to quantize in format *param, in[2] the bias or
 * absent. A backend keeps the matrix's storage until the queued product has run. */
static kiln_tensor *build_matmul_q(kiln_tensor **in, const void *param) {
    kiln_qmatrix *q = quantized(in[1], param);
    kiln_tensor *y = q ? kiln_matmul_q(in[0], q, in[2]) : NULL;
    kiln_qmatrix_free(q);
    return y;
}

/* in[0] dy [.., n], in[1] the weight [n, k] to quantize in format *param: dy W. */
static kiln_tensor *build_matmul_qt(kiln_tensor **in, const void *param) {
    kiln_qmatrix *q = quantized(in[1], param);
    kiln_tensor *y = q ? kiln_matmul_qt(in[0], q) : NULL;
    kiln_qmatrix_free(q);
    return y;
}

static const kiln_qformat q8_0 = KILN_Q8_0, q4_0 = KILN_Q4_0, q4_1 = KILN_Q4_1, q5_0 = KILN_Q5_0, q5_1 = KILN_Q5_1,
                          q4_k = KILN_Q4_K, q5_k = KILN_Q5_K, q6_k = KILN_Q6_K;

#define X(m, k) {.dtype = KILN_F32, .ndim = 2, .shape = {m, k}}
#define W(n, k) {.dtype = KILN_F32, .ndim = 2, .shape = {n, k}}
#define BIAS(n) {.dtype = KILN_F32, .ndim = 1, .shape = {n}}

/* The CPU reference rounds activations to 8 bits (cpu/cpu_quant_dot.h): per block of 32 for
 * the 32-value formats, per 256 (ggml's Q8_K, one f32 scale) for the K formats; a device
 * may not round (kiln_qmatmul_rounds_activations: OpenCL, Vulkan without integer dot
 * products), may round blocks of another size, and one that rounds may round a rare tie the
 * other way (shaders/qmatmul_qx.comp). The normalized error is the squared relative one.
 * With standard normal inputs, one rounding moves each activation by a uniform error of at
 * most half a step, max|x| / 254 over its block: an RMS of max|x| / (127 sqrt(12)) against
 * an RMS activation of 1. The largest |x| of 32 is about 2.1, of 256 about 2.9 (3.8 at the
 * far end of its spread): a squared relative error of 2.2e-5 for blocks of 32 and 4.4e-5
 * (7.5e-5) for Q8_K, and a device that rounds otherwise adds its own: at most about 1e-4.
 * A misread block layout gives about 1, hence 3e-4. */
#define QTOL .fwd_tol = 3e-4, .f16_tol = 3e-4

/* One token (m = 1), a prefill across the kernels' row tiles (m = 17), odd outputs; each
 * format with and without a bias; the K formats with one super-block per row (k = 256) and
 * two (512). */
static const kiln_verify_case cases[] = {
    {.name = "matmul_q8_0_token", .quick = 1, .build = build_matmul_q, .param = &q8_0, .no_grad = 1, QTOL, .n_in = 2,
     .in = {X(1, 160), W(33, 160)}},
    {.name = "matmul_q4_0_token", .quick = 1, .build = build_matmul_q, .param = &q4_0, .no_grad = 1, QTOL, .n_in = 2,
     .in = {X(1, 96), W(7, 96)}},
    /* m = 1 .. 4 (the GPU backends' qgemv: rows of whole groups of 8 blocks, odd outputs) */
    {.name = "matmul_q4_0_gemv_m1_bias", .quick = 1, .build = build_matmul_q, .param = &q4_0, .no_grad = 1, QTOL,
     .n_in = 3, .in = {X(1, 512), W(77, 512), BIAS(77)}},
    {.name = "matmul_q8_0_gemv_m2", .build = build_matmul_q, .param = &q8_0, .no_grad = 1, QTOL, .n_in = 2,
     .in = {X(2, 256), W(131, 256)}},
    {.name = "matmul_q4_0_gemv_m3", .build = build_matmul_q, .param = &q4_0, .no_grad = 1, QTOL, .n_in = 2,
     .in = {X(3, 768), W(45, 768)}},
    {.name = "matmul_q8_0_gemv_m4_bias", .build = build_matmul_q, .param = &q8_0, .no_grad = 1, QTOL, .n_in = 3,
     .in = {X(4, 512), W(67, 512), BIAS(67)}},
    {.name = "matmul_q8_0_prefill_bias", .build = build_matmul_q, .param = &q8_0, .no_grad = 1, QTOL, .n_in = 3,
     .in = {X(17, 64), W(5, 64), BIAS(5)}},
    {.name = "matmul_q4_0_prefill_bias", .build = build_matmul_q, .param = &q4_0, .no_grad = 1, QTOL, .n_in = 3,
     .in = {X(17, 96), W(9, 96), BIAS(9)}},
    {.name = "matmul_q4_1_prefill", .build = build_matmul_q, .param = &q4_1, .no_grad = 1, QTOL, .n_in = 2,
     .in = {X(10, 64), W(3, 64)}},
    {.name = "matmul_q5_0_token", .build = build_matmul_q, .param = &q5_0, .no_grad = 1, QTOL, .n_in = 2,
     .in = {X(1, 96), W(7, 96)}},
    {.name = "matmul_q5_0_prefill_bias", .build = build_matmul_q, .param = &q5_0, .no_grad = 1, QTOL, .n_in = 3,
     .in = {X(17, 160), W(9, 160), BIAS(9)}},
    {.name = "matmul_q5_1_token_bias", .build = build_matmul_q, .param = &q5_1, .no_grad = 1, QTOL, .n_in = 3,
     .in = {X(1, 64), W(5, 64), BIAS(5)}},
    {.name = "matmul_q5_1_prefill", .build = build_matmul_q, .param = &q5_1, .no_grad = 1, QTOL, .n_in = 2,
     .in = {X(17, 96), W(11, 96)}},
    {.name = "matmul_q4_k_token", .quick = 1, .build = build_matmul_q, .param = &q4_k, .no_grad = 1, QTOL, .n_in = 2,
     .in = {X(1, 256), W(33, 256)}},
    {.name = "matmul_q4_k_prefill_bias", .build = build_matmul_q, .param = &q4_k, .no_grad = 1, QTOL, .n_in = 3,
     .in = {X(17, 512), W(9, 512), BIAS(9)}},
    {.name = "matmul_q5_k_token_bias", .build = build_matmul_q, .param = &q5_k, .no_grad = 1, QTOL, .n_in = 3,
     .in = {X(1, 512), W(7, 512), BIAS(7)}},
    {.name = "matmul_q5_k_prefill", .build = build_matmul_q, .param = &q5_k, .no_grad = 1, QTOL, .n_in = 2,
     .in = {X(17, 256), W(11, 256)}},
    {.name = "matmul_q6_k_token", .build = build_matmul_q, .param = &q6_k, .no_grad = 1, QTOL, .n_in = 2,
     .in = {X(1, 512), W(13, 512)}},
    {.name = "matmul_q6_k_prefill_bias", .build = build_matmul_q, .param = &q6_k, .no_grad = 1, QTOL, .n_in = 3,
     .in = {X(17, 256), W(5, 256), BIAS(5)}},
    /* the transposed product: no activation rounding on any backend, so the device meets
     * the CPU within f32 sums in another order and decodings that round d * sc * q in
     * another order (a few ulps of each weight) */
    {.name = "matmul_qt_q8_0_token", .quick = 1, .build = build_matmul_qt, .param = &q8_0, .no_grad = 1,
     .fwd_tol = 1e-9, .n_in = 2, .in = {X(1, 33), W(33, 160)}},
    {.name = "matmul_qt_q4_0_prefill", .build = build_matmul_qt, .param = &q4_0, .no_grad = 1, .fwd_tol = 1e-9,
     .n_in = 2, .in = {X(17, 21), W(21, 96)}},
    {.name = "matmul_qt_q4_1_prefill", .build = build_matmul_qt, .param = &q4_1, .no_grad = 1, .fwd_tol = 1e-9,
     .n_in = 2, .in = {X(10, 7), W(7, 64)}},
    {.name = "matmul_qt_q5_0_prefill", .build = build_matmul_qt, .param = &q5_0, .no_grad = 1, .fwd_tol = 1e-9,
     .n_in = 2, .in = {X(17, 9), W(9, 160)}},
    {.name = "matmul_qt_q5_1_token", .build = build_matmul_qt, .param = &q5_1, .no_grad = 1, .fwd_tol = 1e-9,
     .n_in = 2, .in = {X(1, 5), W(5, 64)}},
    {.name = "matmul_qt_q4_k_prefill", .quick = 1, .build = build_matmul_qt, .param = &q4_k, .no_grad = 1,
     .fwd_tol = 1e-9, .n_in = 2, .in = {X(17, 9), W(9, 512)}},
    {.name = "matmul_qt_q5_k_token", .build = build_matmul_qt, .param = &q5_k, .no_grad = 1, .fwd_tol = 1e-9,
     .n_in = 2, .in = {X(1, 7), W(7, 256)}},
    {.name = "matmul_qt_q6_k_prefill", .build = build_matmul_qt, .param = &q6_k, .no_grad = 1, .fwd_tol = 1e-9,
     .n_in = 2, .in = {X(17, 13), W(13, 256)}},
};
const kiln_verify_group kiln_verify_group_quant =
    {.name = "quant", .cases = cases, .count = (int)(sizeof cases / sizeof cases[0])};
