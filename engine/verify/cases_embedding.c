/* The verification cases of embedding lookup and its scatter-add backward (kiln/verify.h): run by
 * `kiln verify` and by tests/test_op_embedding.c. */
#include "kiln/kiln.h"
#include "verify/cases.h"

static kiln_tensor *build_embedding(kiln_tensor **in, const void *p) {
    (void)p;
    return kiln_embedding(in[0], in[1]);
}

/* More ids than rows in every case, so ids repeat and the scatter-add must sum them. */
static const kiln_verify_case cases[] = {
    {.name = "embedding_2d_ids", .quick = 1, .build = build_embedding, .n_in = 2,
     .in = {{.dtype = KILN_F32, .ndim = 2, .shape = {11, 7}, .grad = 1},
            {.dtype = KILN_I32, .ndim = 2, .shape = {3, 5}, .init = KILN_INIT_INT, .lo = 0, .hi = 10}}},
    {.name = "embedding_1d_ids", .build = build_embedding, .n_in = 2,
     .in = {{.dtype = KILN_F32, .ndim = 2, .shape = {5, 13}, .grad = 1},
            {.dtype = KILN_I32, .ndim = 1, .shape = {9}, .init = KILN_INIT_INT, .lo = 0, .hi = 4}}},
    {.name = "embedding_3d_ids", .build = build_embedding, .n_in = 2,
     .in = {{.dtype = KILN_F32, .ndim = 2, .shape = {6, 3}, .grad = 1},
            {.dtype = KILN_I32, .ndim = 3, .shape = {2, 3, 5}, .init = KILN_INIT_INT, .lo = 0, .hi = 5}}},
    {.name = "embedding_large", .quick = 1, .build = build_embedding, .n_in = 2,
     .in = {{.dtype = KILN_F32, .ndim = 2, .shape = {53, 389}, .grad = 1},
            {.dtype = KILN_I32, .ndim = 2, .shape = {2, 173}, .init = KILN_INIT_INT, .lo = 0, .hi = 52}}},
};
const kiln_verify_group kiln_verify_group_embedding =
    {.name = "embedding", .cases = cases, .count = (int)(sizeof cases / sizeof cases[0])};
