/* The verification cases of cross-entropy with label smoothing and ignored targets
 * (kiln/verify.h): run by `kiln verify` and by tests/test_op_cross_entropy.c. */
#include "kiln/kiln.h"
#include "verify/cases.h"

#define IGNORE (-100) /* the ignore_index of the cases (PyTorch's default) */

typedef struct xent_param {
    float smoothing;
    int ignore_index;
} xent_param;

static kiln_tensor *build_xent(kiln_tensor **in, const void *param) {
    const xent_param *p = param;
    return kiln_cross_entropy(in[0], in[1], p->smoothing, p->ignore_index);
}

static const xent_param PLAIN = {.smoothing = 0.0f, .ignore_index = IGNORE},
                        SMOOTH_IGNORE = {.smoothing = 0.1f, .ignore_index = -1},
                        SMOOTH = {.smoothing = 0.05f, .ignore_index = -1};
static const kiln_verify_case cases[] = {
    {.name = "xent_plain", .build = build_xent, .param = &PLAIN, .n_in = 2,
     .in = {{.dtype = KILN_F32, .ndim = 2, .shape = {7, 11}, .grad = 1},
            {.dtype = KILN_I32, .ndim = 1, .shape = {7}, .init = KILN_INIT_INT, .lo = 0, .hi = 10}}},
    /* targets drawn from [-1, 12]: some rows are ignored */
    {.name = "xent_smoothing_ignore_3d", .quick = 1, .build = build_xent, .param = &SMOOTH_IGNORE, .n_in = 2,
     .in = {{.dtype = KILN_F32, .ndim = 3, .shape = {3, 5, 13}, .grad = 1},
            {.dtype = KILN_I32, .ndim = 2, .shape = {3, 5}, .init = KILN_INIT_INT, .lo = -1, .hi = 12}}},
    {.name = "xent_single_row", .build = build_xent, .param = &SMOOTH, .n_in = 2,
     .in = {{.dtype = KILN_F32, .ndim = 1, .shape = {9}, .grad = 1},
            {.dtype = KILN_I32, .ndim = 0, .init = KILN_INIT_INT, .lo = 0, .hi = 8}}},
    /* few rows, so that each logit's gradient stands well above the f32 noise of the FD loss */
    {.name = "xent_large_odd_vocab", .quick = 1, .build = build_xent, .param = &SMOOTH, .n_in = 2,
     .in = {{.dtype = KILN_F32, .ndim = 2, .shape = {5, 257}, .grad = 1},
            {.dtype = KILN_I32, .ndim = 1, .shape = {5}, .init = KILN_INIT_INT, .lo = 0, .hi = 256}},
     .fd_eps = 0.05},
};
const kiln_verify_group kiln_verify_group_cross_entropy =
    {.name = "cross_entropy", .cases = cases, .count = (int)(sizeof cases / sizeof cases[0])};
