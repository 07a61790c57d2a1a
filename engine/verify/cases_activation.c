/* The verification cases of GELU, ReLU, SiLU and ReLU^2 (kiln/verify.h): run by `kiln verify` and
 * by tests/test_op_activation.c. */
#include "kiln/kiln.h"
#include "verify/cases.h"

static kiln_tensor *build_gelu(kiln_tensor **in, const void *p) { (void)p; return kiln_gelu(in[0]); }
static kiln_tensor *build_relu(kiln_tensor **in, const void *p) { (void)p; return kiln_relu(in[0]); }
static kiln_tensor *build_silu(kiln_tensor **in, const void *p) { (void)p; return kiln_silu(in[0]); }
static kiln_tensor *build_relu2(kiln_tensor **in, const void *p) { (void)p; return kiln_relu2(in[0]); }

/* ReLU-type cases draw inputs away from 0 so no finite difference straddles the kink.
 * The smooth ones use a tight FD tolerance (1e-6): their FD truncation error is ~1e-8, and
 * the default 1e-4 would let a wrong cubic coefficient in GELU's derivative through. */
static const kiln_verify_case cases[] = {
    {.name = "gelu", .quick = 1, .build = build_gelu, .n_in = 1,
     .in = {{.dtype = KILN_F32, .ndim = 3, .shape = {3, 7, 5}, .init = KILN_INIT_NORMAL, .hi = 2, .grad = 1}},
     .fwd_tol = 1e-10, .bwd_tol = 1e-6},
    {.name = "gelu_wide", .build = build_gelu, .n_in = 1,
     .in = {{.dtype = KILN_F32, .ndim = 2, .shape = {13, 37}, .init = KILN_INIT_UNIFORM, .lo = -6, .hi = 6, .grad = 1}},
     .fwd_tol = 1e-10, .bwd_tol = 1e-6},
    {.name = "relu", .quick = 1, .build = build_relu, .n_in = 1,
     .in = {{.dtype = KILN_F32, .ndim = 2, .shape = {9, 11}, .init = KILN_INIT_AWAY0, .grad = 1}}},
    {.name = "silu", .quick = 1, .build = build_silu, .n_in = 1,
     .in = {{.dtype = KILN_F32, .ndim = 4, .shape = {2, 3, 5, 7}, .init = KILN_INIT_NORMAL, .hi = 3, .grad = 1}},
     .fwd_tol = 1e-10, .bwd_tol = 1e-6},
    {.name = "relu2", .build = build_relu2, .n_in = 1,
     .in = {{.dtype = KILN_F32, .ndim = 2, .shape = {7, 13}, .init = KILN_INIT_AWAY0, .grad = 1}}},
    {.name = "gelu_large", .quick = 1, .build = build_gelu, .n_in = 1,
     .in = {{.dtype = KILN_F32, .ndim = 2, .shape = {259, 131}, .grad = 1}}, .fwd_tol = 1e-10, .bwd_tol = 1e-6},
};
const kiln_verify_group kiln_verify_group_activation =
    {.name = "activation", .cases = cases, .count = (int)(sizeof cases / sizeof cases[0])};
