/* The verification cases of the product with a block-quantized matrix (kiln/quant.h): run by
 * `kiln verify` and by tests/test_op_quant.c. The case quantizes its weight input on the host
 * and multiplies on the device, so the device's kernel meets the CPU's on the same blocks;
 * tests/test_op_quant.c also checks both against dequantize-then-multiply. Inference only:
 * no gradient. */
#include <stdlib.h>

#include "kiln/kiln.h"
#include "verify/cases.h"

/* in[0] x [.., k], in[1] the weight [n, k] to quantize in format *param, in[2] the bias or
 * absent. */
static kiln_tensor *build_matmul_q(kiln_tensor **in, const void *param) {
    kiln_tensor *x = in[0], *w = in[1];
    int64_t n = w->shape[0], k = w->shape[1];
    float *host = malloc((size_t)(n * k) * sizeof *host);
    kiln_qmatrix *q = kiln_qmatrix_new(x->ctx, *(const kiln_qformat *)param, n, k);
    kiln_tensor *y = NULL;
    if (!host) kiln_set_error(KILN_ERR_MEMORY, "out of host memory");
    else if (q && !kiln_download_f32(w, host, n * k) && !kiln_qmatrix_quantize(q, host, 0))
        y = kiln_matmul_q(x, q, in[2]);
    free(host);
    kiln_qmatrix_free(q); /* a backend keeps the storage until the queued product has run */
    return y;
}

static const kiln_qformat q8_0 = KILN_Q8_0, q4_0 = KILN_Q4_0, q4_1 = KILN_Q4_1;

#define X(m, k) {.dtype = KILN_F32, .ndim = 2, .shape = {m, k}}
#define W(n, k) {.dtype = KILN_F32, .ndim = 2, .shape = {n, k}}
#define BIAS(n) {.dtype = KILN_F32, .ndim = 1, .shape = {n}}

/* The CPU reference rounds activations to 8 bits per block of 32 (cpu/cpu_quant_dot.h); a device
 * may not (kiln_qmatmul_rounds_activations: OpenCL, Vulkan without integer dot products), and
 * one that does may round a rare tie the other way (shaders/qmatmul_qx.comp): that rounding
 * gives a normalized error near 3e-5 (half a step of max|x| / 127 per value), a misread
 * block layout near 1, hence 3e-4. */
#define QTOL .fwd_tol = 3e-4, .f16_tol = 3e-4

/* One token (m = 1), a prefill across the kernels' row tiles (m = 17), odd outputs. */
static const kiln_verify_case cases[] = {
    {.name = "matmul_q8_0_token", .quick = 1, .build = build_matmul_q, .param = &q8_0, .no_grad = 1, QTOL, .n_in = 2,
     .in = {X(1, 160), W(33, 160)}},
    {.name = "matmul_q4_0_token", .quick = 1, .build = build_matmul_q, .param = &q4_0, .no_grad = 1, QTOL, .n_in = 2,
     .in = {X(1, 96), W(7, 96)}},
    {.name = "matmul_q8_0_prefill_bias", .build = build_matmul_q, .param = &q8_0, .no_grad = 1, QTOL, .n_in = 3,
     .in = {X(17, 64), W(5, 64), BIAS(5)}},
    {.name = "matmul_q4_0_prefill_bias", .build = build_matmul_q, .param = &q4_0, .no_grad = 1, QTOL, .n_in = 3,
     .in = {X(17, 96), W(9, 96), BIAS(9)}},
    {.name = "matmul_q4_1_prefill", .build = build_matmul_q, .param = &q4_1, .no_grad = 1, QTOL, .n_in = 2,
     .in = {X(10, 64), W(3, 64)}},
};
const kiln_verify_group kiln_verify_group_quant =
    {.name = "quant", .cases = cases, .count = (int)(sizeof cases / sizeof cases[0])};
