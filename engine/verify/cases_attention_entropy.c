/* The verification cases of attention entropy, alone and after a softmax (kiln/verify.h): run by
 * `kiln verify` and by tests/test_op_attention_entropy.c. */
#include "kiln/kiln.h"
#include "verify/cases.h"

static kiln_tensor *build_entropy(kiln_tensor **in, const void *p) {
    (void)p;
    return kiln_attention_entropy(in[0]);
}

/* Entropy of real attention: causal masking leaves exact zeros in p. */
static kiln_tensor *build_entropy_of_softmax(kiln_tensor **in, const void *p) {
    (void)p;
    kiln_softmax_opts o = {.scale = 0.7f, .causal = 1};
    return kiln_attention_entropy(kiln_softmax(in[0], &o));
}

static const kiln_verify_case cases[] = {
    /* p away from 0, where d/dp (p log p) = log p + 1 is steep */
    {.name = "entropy_positive_p", .build = build_entropy, .n_in = 1,
     .in = {{.dtype = KILN_F32, .ndim = 4, .shape = {2, 3, 5, 7}, .init = KILN_INIT_UNIFORM, .lo = 0.05f, .hi = 1,
             .grad = 1}}},
    {.name = "entropy_of_causal_softmax", .quick = 1, .build = build_entropy_of_softmax, .n_in = 1,
     .in = {{.dtype = KILN_F32, .ndim = 4, .shape = {2, 3, 4, 6}, .grad = 1}}},
    {.name = "entropy_large_odd", .quick = 1, .build = build_entropy, .n_in = 1,
     .in = {{.dtype = KILN_F32, .ndim = 4, .shape = {3, 5, 17, 33}, .init = KILN_INIT_UNIFORM, .lo = 0.05f, .hi = 1,
             .grad = 1}}},
};
const kiln_verify_group kiln_verify_group_attention_entropy =
    {.name = "attention_entropy", .cases = cases, .count = (int)(sizeof cases / sizeof cases[0])};
