/* The verification cases of the sinusoid table and the finite check (kiln/verify.h): run by `kiln
 * verify` and by tests/test_op_constants.c. */
#include "kiln/kiln.h"
#include "verify/cases.h"

/* Table cases: the input only supplies the context (sinusoid) or the values (check). */
typedef struct table_param { int64_t positions, channels; } table_param;
static kiln_tensor *build_sinusoid(kiln_tensor **in, const void *p) {
    const table_param *t = p;
    return kiln_sinusoid_table(in[0]->ctx, t->positions, t->channels);
}
static kiln_tensor *build_check(kiln_tensor **in, const void *p) {
    (void)p;
    kiln_tensor *flag = kiln_tensor_temp(in[0]->ctx, KILN_I32, 0, NULL);
    if (!flag || kiln_fill(flag, 0) || kiln_check_finite(in[0], flag)) return NULL;
    return flag;
}

static const table_param T97x33 = {.positions = 97, .channels = 33}, T1024x64 = {.positions = 1024, .channels = 64};
/* Not differentiable: forward comparison only. The sinusoid tolerance leaves room for a
 * device that computes the angle in f32 (the reference uses double). The sinusoid cases do
 * not run in f16: their input only supplies the context, and the table is f32 anyway. */
static const kiln_verify_case cases[] = {
    {.name = "sinusoid_odd", .quick = 1, .build = build_sinusoid, .param = &T97x33, .n_in = 1,
     .in = {{.dtype = KILN_F32, .ndim = 1, .shape = {1}}}, .fwd_tol = 1e-8, .no_grad = 1, .no_f16 = 1},
    {.name = "sinusoid_large", .build = build_sinusoid, .param = &T1024x64, .n_in = 1,
     .in = {{.dtype = KILN_F32, .ndim = 1, .shape = {1}}}, .fwd_tol = 1e-8, .no_grad = 1, .no_f16 = 1},
    {.name = "check_finite_f32", .build = build_check, .n_in = 1,
     .in = {{.dtype = KILN_F32, .ndim = 2, .shape = {37, 1001}, .init = KILN_INIT_NORMAL, .hi = 100}}, .no_grad = 1},
    {.name = "check_finite_f16", .quick = 1, .build = build_check, .n_in = 1,
     .in = {{.dtype = KILN_F16, .ndim = 2, .shape = {13, 7}, .init = KILN_INIT_UNIFORM, .lo = -60000, .hi = 60000}},
     .no_grad = 1},
};
const kiln_verify_group kiln_verify_group_constants =
    {.name = "constants", .cases = cases, .count = (int)(sizeof cases / sizeof cases[0])};
