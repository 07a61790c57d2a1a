/* The verification cases of LayerNorm and RMSNorm (kiln/verify.h): run by `kiln verify` and by
 * tests/test_op_norm.c. */
#include "kiln/kiln.h"
#include "verify/cases.h"

/* in = {x, weight, bias}; the param says which of weight and bias are used */
typedef struct norm_param { int weight, bias, rms; float eps; } norm_param;
static kiln_tensor *build_norm(kiln_tensor **in, const void *param) {
    const norm_param *p = param;
    kiln_tensor *w = p->weight ? in[1] : NULL;
    if (p->rms) return kiln_rmsnorm(in[0], w, p->eps);
    return kiln_layernorm(in[0], w, p->bias ? in[p->weight ? 2 : 1] : NULL, p->eps);
}

static const norm_param LN_WB = {.weight = 1, .bias = 1, .eps = 1e-5f}, LN_PLAIN = {.eps = 1e-5f},
                        LN_W = {.weight = 1, .eps = 1e-5f}, LN_B = {.bias = 1, .eps = 0.1f},
                        RMS_W = {.weight = 1, .rms = 1, .eps = 1e-6f}, RMS_PLAIN = {.rms = 1, .eps = 0.2f};
static const kiln_verify_case cases[] = {
    {.name = "layernorm_wb", .quick = 1, .build = build_norm, .param = &LN_WB, .n_in = 3,
     .in = {{.dtype = KILN_F32, .ndim = 3, .shape = {2, 5, 13}, .grad = 1},
            {.dtype = KILN_F32, .ndim = 1, .shape = {13}, .init = KILN_INIT_NORMAL, .lo = 1, .hi = 0.5f, .grad = 1},
            {.dtype = KILN_F32, .ndim = 1, .shape = {13}, .grad = 1}},
     .fwd_tol = 1e-10},
    {.name = "layernorm_offset", .build = build_norm, .param = &LN_WB, .n_in = 3,
     .in = {{.dtype = KILN_F32, .ndim = 2, .shape = {7, 9}, .init = KILN_INIT_NORMAL, .lo = 3, .hi = 2, .grad = 1},
            {.dtype = KILN_F32, .ndim = 1, .shape = {9}, .init = KILN_INIT_NORMAL, .lo = 1, .hi = 0.5f, .grad = 1},
            {.dtype = KILN_F32, .ndim = 1, .shape = {9}, .grad = 1}},
     .fwd_tol = 1e-10},
    {.name = "layernorm_plain", .build = build_norm, .param = &LN_PLAIN, .n_in = 1,
     .in = {{.dtype = KILN_F32, .ndim = 2, .shape = {11, 7}, .grad = 1}}, .fwd_tol = 1e-10},
    {.name = "layernorm_weight_only", .build = build_norm, .param = &LN_W, .n_in = 2,
     .in = {{.dtype = KILN_F32, .ndim = 3, .shape = {3, 3, 5}, .grad = 1},
            {.dtype = KILN_F32, .ndim = 1, .shape = {5}, .grad = 1}},
     .fwd_tol = 1e-10},
    {.name = "layernorm_bias_only", .build = build_norm, .param = &LN_B, .n_in = 2,
     .in = {{.dtype = KILN_F32, .ndim = 1, .shape = {17}, .grad = 1},
            {.dtype = KILN_F32, .ndim = 1, .shape = {17}, .grad = 1}},
     .fwd_tol = 1e-10},
    {.name = "layernorm_large", .quick = 1, .build = build_norm, .param = &LN_WB, .n_in = 3,
     .in = {{.dtype = KILN_F32, .ndim = 2, .shape = {67, 771}, .grad = 1},
            {.dtype = KILN_F32, .ndim = 1, .shape = {771}, .init = KILN_INIT_NORMAL, .lo = 1, .hi = 0.5f, .grad = 1},
            {.dtype = KILN_F32, .ndim = 1, .shape = {771}, .grad = 1}},
     .fwd_tol = 1e-10},
    {.name = "rmsnorm_w", .build = build_norm, .param = &RMS_W, .n_in = 2,
     .in = {{.dtype = KILN_F32, .ndim = 3, .shape = {2, 7, 11}, .grad = 1},
            {.dtype = KILN_F32, .ndim = 1, .shape = {11}, .init = KILN_INIT_NORMAL, .lo = 1, .hi = 0.5f, .grad = 1}},
     .fwd_tol = 1e-10},
    {.name = "rmsnorm_plain", .build = build_norm, .param = &RMS_PLAIN, .n_in = 1,
     .in = {{.dtype = KILN_F32, .ndim = 2, .shape = {5, 19}, .init = KILN_INIT_NORMAL, .lo = 0.5f, .grad = 1}},
     .fwd_tol = 1e-10},
    {.name = "rmsnorm_large", .quick = 1, .build = build_norm, .param = &RMS_W, .n_in = 2,
     .in = {{.dtype = KILN_F32, .ndim = 2, .shape = {53, 683}, .grad = 1},
            {.dtype = KILN_F32, .ndim = 1, .shape = {683}, .init = KILN_INIT_NORMAL, .lo = 1, .hi = 0.5f, .grad = 1}},
     .fwd_tol = 1e-10},
};
const kiln_verify_group kiln_verify_group_norm =
    {.name = "norm", .cases = cases, .count = (int)(sizeof cases / sizeof cases[0])};
