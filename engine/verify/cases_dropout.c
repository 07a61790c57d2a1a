/* The verification cases of dropout (its mask drawn from the counter-based RNG) (kiln/verify.h):
 * run by `kiln verify` and by tests/test_op_dropout.c. */
#include "kiln/kiln.h"
#include "verify/cases.h"

/* Pins the stream so that the forwards of the finite-difference check all draw one mask. */
static kiln_tensor *build_dropout(kiln_tensor **in, const void *param) {
    kiln_set_rng_stream(in[0]->ctx, 0);
    return kiln_dropout(in[0], *(const float *)param);
}

static const float P01 = 0.1f, P03 = 0.3f, P05 = 0.5f;
static const kiln_verify_case cases[] = {
    {.name = "dropout_p03", .build = build_dropout, .param = &P03, .n_in = 1,
     .in = {{.dtype = KILN_F32, .ndim = 2, .shape = {7, 13}, .grad = 1}}},
    {.name = "dropout_p05_3d", .build = build_dropout, .param = &P05, .n_in = 1,
     .in = {{.dtype = KILN_F32, .ndim = 3, .shape = {3, 5, 11}, .grad = 1}}},
    {.name = "dropout_p01_large_odd", .quick = 1, .build = build_dropout, .param = &P01, .n_in = 1,
     .in = {{.dtype = KILN_F32, .ndim = 2, .shape = {37, 129}, .grad = 1}}},
};
const kiln_verify_group kiln_verify_group_dropout =
    {.name = "dropout", .cases = cases, .count = (int)(sizeof cases / sizeof cases[0])};
