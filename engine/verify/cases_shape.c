/* The verification cases of head split and merge, concat, slice and casts (kiln/verify.h): run by
 * `kiln verify` and by tests/test_op_shape.c. */
#include "kiln/kiln.h"
#include "verify/cases.h"

static kiln_tensor *build_split(kiln_tensor **in, const void *p) { return kiln_split_heads(in[0], *(const int *)p); }
static kiln_tensor *build_merge(kiln_tensor **in, const void *p) { (void)p; return kiln_merge_heads(in[0]); }
/* param: the axis; every input is concatenated in order */
typedef struct concat_param { int count, axis; } concat_param;
static kiln_tensor *build_concat(kiln_tensor **in, const void *p) {
    const concat_param *c = p;
    return kiln_concat(in, c->count, c->axis);
}
typedef struct slice_param { int axis; int64_t start, len; } slice_param;
static kiln_tensor *build_slice(kiln_tensor **in, const void *p) {
    const slice_param *s = p;
    return kiln_slice(in[0], s->axis, s->start, s->len);
}
/* f32 -> f16 -> f32, or an f16 input cast to f32 (optionally through an f16 copy) */
static kiln_tensor *build_cast_roundtrip(kiln_tensor **in, const void *p) {
    (void)p;
    return kiln_cast(kiln_cast(in[0], KILN_F16), KILN_F32);
}
static kiln_tensor *build_cast_up(kiln_tensor **in, const void *p) { (void)p; return kiln_cast(in[0], KILN_F32); }

static const int H3 = 3, H5 = 5;
static const concat_param CAT3_0 = {.count = 3, .axis = 0}, CAT3_1 = {.count = 3, .axis = 1},
                          CAT2_LAST = {.count = 2, .axis = -1}, CAT2_MID = {.count = 2, .axis = -2};
static const slice_param SL_MID = {.axis = 1, .start = 2, .len = 5}, SL_LAST = {.axis = -1, .start = 0, .len = 4},
                         SL_ROWS = {.axis = 0, .start = 3, .len = 2}, SL_BIG = {.axis = 1, .start = 17, .len = 60};
/* Casts are linear up to f16 rounding: a large FD step keeps that rounding small next to it. */
static const kiln_verify_case cases[] = {
    {.name = "split_heads", .quick = 1, .build = build_split, .param = &H3, .n_in = 1,
     .in = {{.dtype = KILN_F32, .ndim = 3, .shape = {2, 5, 21}, .grad = 1}}},
    {.name = "split_heads_large", .build = build_split, .param = &H5, .n_in = 1,
     .in = {{.dtype = KILN_F32, .ndim = 3, .shape = {3, 101, 115}, .grad = 1}}},
    {.name = "merge_heads", .quick = 1, .build = build_merge, .n_in = 1,
     .in = {{.dtype = KILN_F32, .ndim = 4, .shape = {2, 3, 5, 7}, .grad = 1}}},
    {.name = "merge_heads_large", .build = build_merge, .n_in = 1,
     .in = {{.dtype = KILN_F32, .ndim = 4, .shape = {3, 7, 67, 29}, .grad = 1}}},
    {.name = "concat_axis0", .build = build_concat, .param = &CAT3_0, .n_in = 3,
     .in = {{.dtype = KILN_F32, .ndim = 2, .shape = {3, 5}, .grad = 1},
            {.dtype = KILN_F32, .ndim = 2, .shape = {1, 5}, .grad = 1},
            {.dtype = KILN_F32, .ndim = 2, .shape = {4, 5}, .grad = 1}}},
    {.name = "concat_axis1_3d", .quick = 1, .build = build_concat, .param = &CAT3_1, .n_in = 3,
     .in = {{.dtype = KILN_F32, .ndim = 3, .shape = {2, 3, 7}, .grad = 1},
            {.dtype = KILN_F32, .ndim = 3, .shape = {2, 5, 7}},
            {.dtype = KILN_F32, .ndim = 3, .shape = {2, 1, 7}, .grad = 1}}},
    {.name = "concat_last", .build = build_concat, .param = &CAT2_LAST, .n_in = 2,
     .in = {{.dtype = KILN_F32, .ndim = 3, .shape = {3, 2, 5}, .grad = 1},
            {.dtype = KILN_F32, .ndim = 3, .shape = {3, 2, 9}, .grad = 1}}},
    {.name = "concat_large", .build = build_concat, .param = &CAT2_MID, .n_in = 2,
     .in = {{.dtype = KILN_F32, .ndim = 3, .shape = {5, 41, 97}, .grad = 1},
            {.dtype = KILN_F32, .ndim = 3, .shape = {5, 29, 97}, .grad = 1}}},
    {.name = "slice_mid", .quick = 1, .build = build_slice, .param = &SL_MID, .n_in = 1,
     .in = {{.dtype = KILN_F32, .ndim = 3, .shape = {3, 11, 7}, .grad = 1}}},
    {.name = "slice_last", .build = build_slice, .param = &SL_LAST, .n_in = 1,
     .in = {{.dtype = KILN_F32, .ndim = 2, .shape = {5, 9}, .grad = 1}}},
    {.name = "slice_rows", .build = build_slice, .param = &SL_ROWS, .n_in = 1,
     .in = {{.dtype = KILN_F32, .ndim = 3, .shape = {7, 3, 5}, .grad = 1}}},
    {.name = "slice_large", .build = build_slice, .param = &SL_BIG, .n_in = 1,
     .in = {{.dtype = KILN_F32, .ndim = 3, .shape = {3, 97, 211}, .grad = 1}}},
    {.name = "cast_f16_roundtrip", .quick = 1, .build = build_cast_roundtrip, .n_in = 1,
     .in = {{.dtype = KILN_F32, .ndim = 2, .shape = {7, 9}, .grad = 1}}, .fd_eps = 0.25},
    {.name = "cast_f16_to_f32", .build = build_cast_up, .n_in = 1,
     .in = {{.dtype = KILN_F16, .ndim = 3, .shape = {3, 5, 7}, .grad = 1}}, .fd_eps = 0.25},
    {.name = "cast_f16_copy", .build = build_cast_roundtrip, .n_in = 1,
     .in = {{.dtype = KILN_F16, .ndim = 2, .shape = {11, 3}, .grad = 1}}, .fd_eps = 0.25},
};
const kiln_verify_group kiln_verify_group_shape =
    {.name = "shape", .cases = cases, .count = (int)(sizeof cases / sizeof cases[0])};
