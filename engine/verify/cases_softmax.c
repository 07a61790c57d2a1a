/* The verification cases of masked softmax: scaling, causal masks, lengths and additive masks
 * (kiln/verify.h): run by `kiln verify` and by tests/test_op_softmax.c. */
#include "kiln/kiln.h"
#include "verify/cases.h"

/* Which case inputs are the key lengths and the additive scores (0: absent; input 0 is
 * always the scores). */
typedef struct sm_param {
    float scale, temperature;
    int causal, lengths_in, add_in;
} sm_param;

static kiln_tensor *build_softmax(kiln_tensor **in, const void *param) {
    const sm_param *p = param;
    kiln_softmax_opts o = {.scale = p->scale, .temperature = p->temperature, .causal = p->causal,
                           .key_lengths = p->lengths_in ? in[p->lengths_in] : NULL,
                           .add = p->add_in ? in[p->add_in] : NULL};
    return kiln_softmax(in[0], &o);
}

static const sm_param PLAIN = {.scale = 0.5f}, CAUSAL = {.causal = 1}, LENGTHS = {.scale = 1.3f, .lengths_in = 1},
                      ALL = {.scale = 0.3f, .temperature = 0.7f, .causal = 1, .lengths_in = 1, .add_in = 2},
                      LARGE = {.scale = 0.125f, .causal = 1, .lengths_in = 1},
                      ADD_ONLY = {.temperature = 1.5f, .add_in = 1};

static const kiln_verify_case cases[] = {
    {.name = "softmax_plain", .build = build_softmax, .param = &PLAIN, .n_in = 1,
     .in = {{.dtype = KILN_F32, .ndim = 4, .shape = {2, 3, 5, 7}, .grad = 1}}},
    {.name = "softmax_causal_tq_lt_tk", .quick = 1, .build = build_softmax, .param = &CAUSAL, .n_in = 1,
     .in = {{.dtype = KILN_F32, .ndim = 4, .shape = {2, 2, 3, 6}, .grad = 1}}},
    /* Tq > Tk: the first two queries of every head see no key */
    {.name = "softmax_causal_tq_gt_tk", .build = build_softmax, .param = &CAUSAL, .n_in = 1,
     .in = {{.dtype = KILN_F32, .ndim = 4, .shape = {1, 3, 5, 3}, .grad = 1}}},
    /* lengths drawn from [0, 5]: some sequences fully masked */
    {.name = "softmax_lengths", .build = build_softmax, .param = &LENGTHS, .n_in = 2,
     .in = {{.dtype = KILN_F32, .ndim = 4, .shape = {3, 2, 4, 5}, .grad = 1},
            {.dtype = KILN_I32, .ndim = 1, .shape = {3}, .init = KILN_INIT_INT, .lo = 0, .hi = 5}}},
    {.name = "softmax_all_options", .quick = 1, .build = build_softmax, .param = &ALL, .n_in = 3,
     .in = {{.dtype = KILN_F32, .ndim = 4, .shape = {2, 3, 5, 5}, .grad = 1},
            {.dtype = KILN_I32, .ndim = 1, .shape = {2}, .init = KILN_INIT_INT, .lo = 1, .hi = 5},
            {.dtype = KILN_F32, .ndim = 4, .shape = {2, 3, 5, 5}, .grad = 1}}},
    {.name = "softmax_add_only", .build = build_softmax, .param = &ADD_ONLY, .n_in = 2,
     .in = {{.dtype = KILN_F32, .ndim = 4, .shape = {1, 2, 7, 9}, .grad = 1},
            {.dtype = KILN_F32, .ndim = 4, .shape = {1, 2, 7, 9}, .grad = 1}}},
    {.name = "softmax_large_odd", .quick = 1, .build = build_softmax, .param = &LARGE, .n_in = 2,
     .in = {{.dtype = KILN_F32, .ndim = 4, .shape = {2, 4, 33, 65}, .init = KILN_INIT_NORMAL, .hi = 3, .grad = 1},
            {.dtype = KILN_I32, .ndim = 1, .shape = {2}, .init = KILN_INIT_INT, .lo = 1, .hi = 65}}},
};
const kiln_verify_group kiln_verify_group_softmax =
    {.name = "softmax", .cases = cases, .count = (int)(sizeof cases / sizeof cases[0])};
