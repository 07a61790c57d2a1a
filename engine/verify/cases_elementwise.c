/* The verification cases of elementwise arithmetic: add, sub, mul, div with broadcasting and
 * scalars, and scale (kiln/verify.h): run by `kiln verify` and by tests/test_op_matmul.c. */
#include "kiln/kiln.h"
#include "verify/cases.h"

static kiln_tensor *build_add(kiln_tensor **in, const void *p) { (void)p; return kiln_add(in[0], in[1]); }
static kiln_tensor *build_sub(kiln_tensor **in, const void *p) { (void)p; return kiln_sub(in[0], in[1]); }
static kiln_tensor *build_mul(kiln_tensor **in, const void *p) { (void)p; return kiln_mul(in[0], in[1]); }
static kiln_tensor *build_div(kiln_tensor **in, const void *p) { (void)p; return kiln_div(in[0], in[1]); }
/* b is a: the gradient is 0, reached only when db's term is added onto a complete da */
static kiln_tensor *build_div_by_itself(kiln_tensor **in, const void *p) { (void)p; return kiln_div(in[0], in[0]); }
static kiln_tensor *build_scale(kiln_tensor **in, const void *p) { (void)p; return kiln_scale(in[0], -1.75f); }

static const kiln_verify_case cases[] = {
    {.name = "add_same", .build = build_add, .n_in = 2,
     .in = {{.dtype = KILN_F32, .ndim = 2, .shape = {5, 3}, .grad = 1},
            {.dtype = KILN_F32, .ndim = 2, .shape = {5, 3}, .grad = 1}}},
    {.name = "add_broadcast", .quick = 1, .build = build_add, .n_in = 2,
     .in = {{.dtype = KILN_F32, .ndim = 3, .shape = {2, 5, 3}, .grad = 1},
            {.dtype = KILN_F32, .ndim = 2, .shape = {5, 3}, .grad = 1}}},
    {.name = "sub_broadcast", .build = build_sub, .n_in = 2,
     .in = {{.dtype = KILN_F32, .ndim = 2, .shape = {4, 7}, .grad = 1},
            {.dtype = KILN_F32, .ndim = 1, .shape = {7}, .grad = 1}}},
    {.name = "mul_same", .build = build_mul, .n_in = 2,
     .in = {{.dtype = KILN_F32, .ndim = 2, .shape = {5, 3}, .grad = 1},
            {.dtype = KILN_F32, .ndim = 2, .shape = {5, 3}, .grad = 1}}},
    {.name = "mul_broadcast", .build = build_mul, .n_in = 2,
     .in = {{.dtype = KILN_F32, .ndim = 3, .shape = {2, 3, 5}, .grad = 1},
            {.dtype = KILN_F32, .ndim = 1, .shape = {5}, .grad = 1}}},
    /* divisors kept within 0.5 .. 2 in size: the finite differences of 1/b stay accurate */
    {.name = "div_same", .build = build_div, .n_in = 2,
     .in = {{.dtype = KILN_F32, .ndim = 2, .shape = {5, 3}, .grad = 1},
            {.dtype = KILN_F32, .ndim = 2, .shape = {5, 3}, .init = KILN_INIT_UNIFORM, .lo = 0.5f, .hi = 2, .grad = 1}}},
    {.name = "div_broadcast", .quick = 1, .build = build_div, .n_in = 2,
     .in = {{.dtype = KILN_F32, .ndim = 3, .shape = {2, 5, 3}, .grad = 1},
            {.dtype = KILN_F32, .ndim = 2, .shape = {5, 3}, .init = KILN_INIT_UNIFORM, .lo = -2, .hi = -0.5f, .grad = 1}}},
    {.name = "div_by_itself", .build = build_div_by_itself, .n_in = 1,
     .in = {{.dtype = KILN_F32, .ndim = 2, .shape = {4, 6}, .init = KILN_INIT_UNIFORM, .lo = 0.5f, .hi = 2, .grad = 1}}},
    /* b of one element: [1], 0-d, [1, 1] */
    {.name = "div_scalar", .build = build_div, .n_in = 2,
     .in = {{.dtype = KILN_F32, .ndim = 2, .shape = {4, 7}, .grad = 1},
            {.dtype = KILN_F32, .ndim = 1, .shape = {1}, .init = KILN_INIT_UNIFORM, .lo = 0.5f, .hi = 2, .grad = 1}}},
    {.name = "div_scalar_0d", .build = build_div, .n_in = 2,
     .in = {{.dtype = KILN_F32, .ndim = 3, .shape = {2, 3, 5}, .grad = 1},
            {.dtype = KILN_F32, .ndim = 0, .init = KILN_INIT_UNIFORM, .lo = -2, .hi = -0.5f, .grad = 1}}},
    {.name = "mul_scalar", .build = build_mul, .n_in = 2,
     .in = {{.dtype = KILN_F32, .ndim = 3, .shape = {2, 3, 5}, .grad = 1},
            {.dtype = KILN_F32, .ndim = 1, .shape = {1}, .grad = 1}}},
    {.name = "add_scalar", .build = build_add, .n_in = 2,
     .in = {{.dtype = KILN_F32, .ndim = 2, .shape = {4, 7}, .grad = 1},
            {.dtype = KILN_F32, .ndim = 2, .shape = {1, 1}, .grad = 1}}},
    {.name = "sub_scalar_0d", .build = build_sub, .n_in = 2,
     .in = {{.dtype = KILN_F32, .ndim = 2, .shape = {3, 4}, .grad = 1},
            {.dtype = KILN_F32, .ndim = 0, .grad = 1}}},
    /* longer than one CPU block (8192) and one GPU workgroup: the scalar forward in pieces,
     * b's gradient a reduction across workgroups (a's gradient is elementwise, checked above;
     * leaving it out keeps the finite differences to the one scalar) */
    {.name = "mul_scalar_long", .quick = 1, .build = build_mul, .n_in = 2,
     .in = {{.dtype = KILN_F32, .ndim = 2, .shape = {3, 4099}},
            {.dtype = KILN_F32, .ndim = 1, .shape = {1}, .grad = 1}}},
    {.name = "div_scalar_long", .build = build_div, .n_in = 2,
     .in = {{.dtype = KILN_F32, .ndim = 2, .shape = {3, 4099}},
            {.dtype = KILN_F32, .ndim = 1, .shape = {1}, .init = KILN_INIT_UNIFORM, .lo = 0.5f, .hi = 2, .grad = 1}}},
    {.name = "scale", .build = build_scale, .n_in = 1,
     .in = {{.dtype = KILN_F32, .ndim = 3, .shape = {2, 3, 5}, .grad = 1}}},
};
const kiln_verify_group kiln_verify_group_elementwise =
    {.name = "elementwise", .cases = cases, .count = (int)(sizeof cases / sizeof cases[0])};
