/* The verification cases of sum, mean and the global norm (kiln/verify.h): run by `kiln verify`
 * and by tests/test_op_reduce.c. */
#include "kiln/kiln.h"
#include "verify/cases.h"

static kiln_tensor *build_sum(kiln_tensor **in, const void *p) { (void)p; return kiln_sum(in[0]); }
static kiln_tensor *build_mean(kiln_tensor **in, const void *p) { (void)p; return kiln_mean(in[0]); }
static kiln_tensor *build_norm(kiln_tensor **in, const void *p) { return kiln_global_norm(in, *(const int *)p); }

static const int ONE = 1, THREE = 3;
/* The large norm takes an FD step of 1: one element moves a norm of ~190 by only
 * step * x / 190, which a small step would drown in the f32 rounding of the norm. */
static const kiln_verify_case cases[] = {
    {.name = "sum", .build = build_sum, .n_in = 1, .in = {{.dtype = KILN_F32, .ndim = 2, .shape = {7, 13}, .grad = 1}},
     .fwd_tol = 1e-10},
    {.name = "mean", .build = build_mean, .n_in = 1,
     .in = {{.dtype = KILN_F32, .ndim = 3, .shape = {3, 5, 7}, .init = KILN_INIT_NORMAL, .lo = 0.5f, .grad = 1}},
     .fwd_tol = 1e-10},
    {.name = "sum_large", .quick = 1, .build = build_sum, .n_in = 1,
     .in = {{.dtype = KILN_F32, .ndim = 2, .shape = {181, 199}, .grad = 1}}, .fwd_tol = 1e-10},
    {.name = "global_norm_one", .build = build_norm, .param = &ONE, .n_in = 1,
     .in = {{.dtype = KILN_F32, .ndim = 2, .shape = {5, 11}, .grad = 1}}, .fwd_tol = 1e-10},
    {.name = "global_norm_three", .quick = 1, .build = build_norm, .param = &THREE, .n_in = 3,
     .in = {{.dtype = KILN_F32, .ndim = 2, .shape = {3, 7}, .grad = 1},
            {.dtype = KILN_F32, .ndim = 1, .shape = {13}, .init = KILN_INIT_NORMAL, .lo = 1},
            {.dtype = KILN_F32, .ndim = 3, .shape = {2, 3, 5}, .init = KILN_INIT_NORMAL, .hi = 2, .grad = 1}},
     .fwd_tol = 1e-10},
    {.name = "global_norm_large", .build = build_norm, .param = &ONE, .n_in = 1,
     .in = {{.dtype = KILN_F32, .ndim = 2, .shape = {181, 199}, .grad = 1}}, .fwd_tol = 1e-10, .fd_eps = 1.0},
};
const kiln_verify_group kiln_verify_group_reduce =
    {.name = "reduce", .cases = cases, .count = (int)(sizeof cases / sizeof cases[0])};
