/* The verification cases of y = s * x (kiln/verify.h): run by `kiln verify` and by
 * tests/test_op_smul.c. */
#include "kiln/kiln.h"
#include "verify/cases.h"

static kiln_tensor *build_smul(kiln_tensor **in, const void *p) { (void)p; return kiln_smul(in[0], -1.75f); }

static const kiln_verify_case cases[] = {
    {.name = "smul", .quick = 1, .build = build_smul, .n_in = 1,
     .in = {{.dtype = KILN_F32, .ndim = 2, .shape = {9, 11}, .init = KILN_INIT_NORMAL, .hi = 2, .grad = 1}}},
    {.name = "smul_large", .build = build_smul, .n_in = 1,
     .in = {{.dtype = KILN_F32, .ndim = 1, .shape = {4099}, .grad = 1}}},
};
const kiln_verify_group kiln_verify_group_smul =
    {.name = "smul", .cases = cases, .count = (int)(sizeof cases / sizeof cases[0])};
