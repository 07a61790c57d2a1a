/* The verification cases of matrix products: every transpose, bias, batches with and without
 * a shared operand, and ragged sizes on both sides of the kernels' tiles (kiln/verify.h).
 * `kiln verify` and tests/test_op_matmul.c run each case once with every GEMM variant the
 * device can be forced to (kiln_set_gemm_variant), besides the device's own choice. */
#include "kiln/kiln.h"
#include "verify/cases.h"

typedef struct mm_param { int ta, tb, bias; } mm_param;
static kiln_tensor *build_matmul(kiln_tensor **in, const void *param) {
    const mm_param *p = param;
    return kiln_matmul(in[0], in[1], p->bias ? in[2] : NULL, p->ta, p->tb);
}

static const mm_param NN = {.bias = 1}, NT = {.tb = 1}, TN = {.ta = 1, .bias = 1}, TT = {.ta = 1, .tb = 1};
static const kiln_verify_case cases[] = {
    {.name = "matmul_nn_bias", .quick = 1, .build = build_matmul, .param = &NN, .n_in = 3,
     .in = {{.dtype = KILN_F32, .ndim = 2, .shape = {7, 5}, .grad = 1},
            {.dtype = KILN_F32, .ndim = 2, .shape = {5, 9}, .grad = 1},
            {.dtype = KILN_F32, .ndim = 1, .shape = {9}, .grad = 1}},
     .fwd_tol = 1e-10},
    {.name = "matmul_nt", .build = build_matmul, .param = &NT, .n_in = 2,
     .in = {{.dtype = KILN_F32, .ndim = 2, .shape = {7, 5}, .grad = 1},
            {.dtype = KILN_F32, .ndim = 2, .shape = {9, 5}, .grad = 1}},
     .fwd_tol = 1e-10},
    {.name = "matmul_tn_bias", .build = build_matmul, .param = &TN, .n_in = 3,
     .in = {{.dtype = KILN_F32, .ndim = 2, .shape = {5, 7}, .grad = 1},
            {.dtype = KILN_F32, .ndim = 2, .shape = {5, 9}, .grad = 1},
            {.dtype = KILN_F32, .ndim = 1, .shape = {9}, .grad = 1}},
     .fwd_tol = 1e-10},
    {.name = "matmul_tt", .build = build_matmul, .param = &TT, .n_in = 2,
     .in = {{.dtype = KILN_F32, .ndim = 2, .shape = {5, 7}, .grad = 1},
            {.dtype = KILN_F32, .ndim = 2, .shape = {9, 5}, .grad = 1}},
     .fwd_tol = 1e-10},
    {.name = "matmul_batched_nn", .build = build_matmul, .param = &NN, .n_in = 3,
     .in = {{.dtype = KILN_F32, .ndim = 3, .shape = {3, 6, 5}, .grad = 1},
            {.dtype = KILN_F32, .ndim = 3, .shape = {3, 5, 4}, .grad = 1},
            {.dtype = KILN_F32, .ndim = 1, .shape = {4}, .grad = 1}},
     .fwd_tol = 1e-10},
    {.name = "matmul_batched_nt", .quick = 1, .build = build_matmul, .param = &NT, .n_in = 2,
     .in = {{.dtype = KILN_F32, .ndim = 4, .shape = {2, 2, 6, 5}, .grad = 1},
            {.dtype = KILN_F32, .ndim = 4, .shape = {2, 2, 4, 5}, .grad = 1}},
     .fwd_tol = 1e-10},
    {.name = "matmul_batched_tt", .build = build_matmul, .param = &TT, .n_in = 2,
     .in = {{.dtype = KILN_F32, .ndim = 3, .shape = {3, 5, 6}, .grad = 1},
            {.dtype = KILN_F32, .ndim = 3, .shape = {3, 4, 5}, .grad = 1}},
     .fwd_tol = 1e-10},
    {.name = "matmul_shared_b", .build = build_matmul, .param = &NN, .n_in = 3,
     .in = {{.dtype = KILN_F32, .ndim = 3, .shape = {3, 7, 5}, .grad = 1},
            {.dtype = KILN_F32, .ndim = 2, .shape = {5, 11}, .grad = 1},
            {.dtype = KILN_F32, .ndim = 1, .shape = {11}, .grad = 1}},
     .fwd_tol = 1e-10},
    {.name = "matmul_shared_b_nt", .build = build_matmul, .param = &NT, .n_in = 2,
     .in = {{.dtype = KILN_F32, .ndim = 3, .shape = {3, 7, 5}, .grad = 1},
            {.dtype = KILN_F32, .ndim = 2, .shape = {11, 5}, .grad = 1}},
     .fwd_tol = 1e-10},
    {.name = "matmul_shared_b_tn", .build = build_matmul, .param = &TN, .n_in = 3,
     .in = {{.dtype = KILN_F32, .ndim = 3, .shape = {2, 5, 7}, .grad = 1},
            {.dtype = KILN_F32, .ndim = 2, .shape = {5, 3}, .grad = 1},
            {.dtype = KILN_F32, .ndim = 1, .shape = {3}, .grad = 1}},
     .fwd_tol = 1e-10},
    {.name = "matmul_shared_b_tt", .quick = 1, .build = build_matmul, .param = &TT, .n_in = 2,
     .in = {{.dtype = KILN_F32, .ndim = 3, .shape = {2, 5, 7}, .grad = 1},
            {.dtype = KILN_F32, .ndim = 2, .shape = {3, 5}, .grad = 1}},
     .fwd_tol = 1e-10},
    {.name = "matmul_large_odd", .build = build_matmul, .param = &NT, .n_in = 2,
     .in = {{.dtype = KILN_F32, .ndim = 2, .shape = {67, 131}, .grad = 1},
            {.dtype = KILN_F32, .ndim = 2, .shape = {45, 131}, .grad = 1}},
     .fwd_tol = 1e-10},
    /* larger ragged shapes: none a multiple of any kernel's tile, so every variant runs
     * its edge paths; m = 1 is a decoding step's product, k = 1 an outer product */
    {.name = "matmul_ragged_nn_bias", .build = build_matmul, .param = &NN, .n_in = 3,
     .in = {{.dtype = KILN_F32, .ndim = 2, .shape = {67, 131}, .grad = 1},
            {.dtype = KILN_F32, .ndim = 2, .shape = {131, 45}, .grad = 1},
            {.dtype = KILN_F32, .ndim = 1, .shape = {45}, .grad = 1}},
     .fwd_tol = 1e-10},
    {.name = "matmul_ragged_tn_bias", .quick = 1, .build = build_matmul, .param = &TN, .n_in = 3,
     .in = {{.dtype = KILN_F32, .ndim = 2, .shape = {131, 67}, .grad = 1},
            {.dtype = KILN_F32, .ndim = 2, .shape = {131, 45}, .grad = 1},
            {.dtype = KILN_F32, .ndim = 1, .shape = {45}, .grad = 1}},
     .fwd_tol = 1e-10},
    {.name = "matmul_ragged_tt", .build = build_matmul, .param = &TT, .n_in = 2,
     .in = {{.dtype = KILN_F32, .ndim = 2, .shape = {131, 67}, .grad = 1},
            {.dtype = KILN_F32, .ndim = 2, .shape = {45, 131}, .grad = 1}},
     .fwd_tol = 1e-10},
    {.name = "matmul_m1_bias", .quick = 1, .build = build_matmul, .param = &NN, .n_in = 3,
     .in = {{.dtype = KILN_F32, .ndim = 2, .shape = {1, 257}, .grad = 1},
            {.dtype = KILN_F32, .ndim = 2, .shape = {257, 300}, .grad = 1},
            {.dtype = KILN_F32, .ndim = 1, .shape = {300}, .grad = 1}},
     .fwd_tol = 1e-10},
    {.name = "matmul_batched_ragged_nt", .build = build_matmul, .param = &NT, .n_in = 2,
     .in = {{.dtype = KILN_F32, .ndim = 3, .shape = {4, 33, 65}, .grad = 1},
            {.dtype = KILN_F32, .ndim = 3, .shape = {4, 29, 65}, .grad = 1}},
     .fwd_tol = 1e-10},
    {.name = "matmul_k1", .build = build_matmul, .param = &NN, .n_in = 3,
     .in = {{.dtype = KILN_F32, .ndim = 2, .shape = {31, 1}, .grad = 1},
            {.dtype = KILN_F32, .ndim = 2, .shape = {1, 29}, .grad = 1},
            {.dtype = KILN_F32, .ndim = 1, .shape = {29}, .grad = 1}},
     .fwd_tol = 1e-10},
};
const kiln_verify_group kiln_verify_group_matmul =
    {.name = "matmul", .cases = cases, .count = (int)(sizeof cases / sizeof cases[0]), .gemm_variants = 1};
