/* The verification cases of rotary position embeddings (kiln/verify.h): run by `kiln verify`
 * and by tests/test_op_rope.c.
 *
 * Tolerances. The CPU reference takes each angle and its cosine and sine in double; the
 * devices form the angle in f32 (as PyTorch and llama.cpp do), so an angle of a radians is
 * off by a few times a * 2^-24 (the frequency's few ulp times the position), and so is every
 * rotated element, relative to its pair. The normalized error is about the square of that,
 * averaged over the pairs. Measured on lavapipe and PoCL: at most 3e-13 for positions up to
 * 300 (fwd_tol 1e-9 leaves room for other devices' exp2, sin and cos), 1.2e-9 at positions
 * near 4000 (the long-context case's 1e-8). The backward is the same kernel, so the
 * gradients take the same tolerances. f16 runs meet the default f16 tolerance: one
 * rounding on load and one on store. */
#include "kiln/kiln.h"
#include "verify/cases.h"

/* in = {x} or {x, factors}; the factors are f32 whatever the run's precision (an f16 run
 * rounds them to f16 values first, the same on both sides) */
typedef struct rope_param {
    kiln_rope_layout layout;
    float base;
    int64_t pos0;
    int factors;
} rope_param;

static kiln_tensor *build_rope(kiln_tensor **in, const void *param) {
    const rope_param *p = param;
    kiln_tensor *factors = NULL;
    if (p->factors) factors = in[1]->dtype == KILN_F32 ? in[1] : kiln_cast(in[1], KILN_F32);
    if (p->factors && !factors) return NULL;
    kiln_rope_opts o = {.base = p->base, .layout = p->layout, .pos0 = p->pos0, .freq_factors = factors};
    return kiln_rope(in[0], &o);
}

static const rope_param ADJ = {.layout = KILN_ROPE_ADJACENT}, HALF = {.layout = KILN_ROPE_HALF},
                        ADJ_OFFSET = {.layout = KILN_ROPE_ADJACENT, .base = 500000.0f, .pos0 = 37},
                        HALF_OFFSET = {.layout = KILN_ROPE_HALF, .base = 1000000.0f, .pos0 = 11},
                        ADJ_FACTORS = {.layout = KILN_ROPE_ADJACENT, .base = 500000.0f, .pos0 = 5, .factors = 1},
                        HALF_FACTORS = {.layout = KILN_ROPE_HALF, .base = 10000.0f, .factors = 1},
                        HALF_DECODE = {.layout = KILN_ROPE_HALF, .base = 1000000.0f, .pos0 = 300, .factors = 1},
                        HALF_LONG = {.layout = KILN_ROPE_HALF, .base = 10000.0f, .pos0 = 4000};

/* llama3-style factors: 1 for the fast pairs up to 32 for the slow ones */
#define FACTORS(pairs) {.dtype = KILN_F32, .ndim = 1, .shape = {pairs}, .init = KILN_INIT_UNIFORM, .lo = 1, .hi = 32}

static const kiln_verify_case cases[] = {
    {.name = "rope_adjacent", .quick = 1, .build = build_rope, .param = &ADJ, .n_in = 1,
     .in = {{.dtype = KILN_F32, .ndim = 4, .shape = {2, 5, 3, 8}, .grad = 1}}, .fwd_tol = 1e-9},
    {.name = "rope_half", .build = build_rope, .param = &HALF, .n_in = 1,
     .in = {{.dtype = KILN_F32, .ndim = 4, .shape = {2, 5, 3, 8}, .grad = 1}}, .fwd_tol = 1e-9},
    {.name = "rope_adjacent_offset_odd", .build = build_rope, .param = &ADJ_OFFSET, .n_in = 1,
     .in = {{.dtype = KILN_F32, .ndim = 4, .shape = {1, 7, 3, 16}, .grad = 1}}, .fwd_tol = 1e-9},
    {.name = "rope_half_offset_odd", .build = build_rope, .param = &HALF_OFFSET, .n_in = 1,
     .in = {{.dtype = KILN_F32, .ndim = 4, .shape = {3, 9, 5, 12}, .grad = 1}}, .fwd_tol = 1e-9},
    {.name = "rope_adjacent_factors", .build = build_rope, .param = &ADJ_FACTORS, .n_in = 2,
     .in = {{.dtype = KILN_F32, .ndim = 4, .shape = {2, 3, 7, 10}, .grad = 1}, FACTORS(5)}, .fwd_tol = 1e-9},
    {.name = "rope_half_factors", .quick = 1, .build = build_rope, .param = &HALF_FACTORS, .n_in = 2,
     .in = {{.dtype = KILN_F32, .ndim = 4, .shape = {1, 11, 2, 32}, .grad = 1}, FACTORS(16)}, .fwd_tol = 1e-9},
    {.name = "rope_half_decode_step", .build = build_rope, .param = &HALF_DECODE, .n_in = 2,
     .in = {{.dtype = KILN_F32, .ndim = 4, .shape = {2, 1, 3, 64}, .grad = 1}, FACTORS(32)}, .fwd_tol = 1e-9},
    {.name = "rope_half_long_context", .build = build_rope, .param = &HALF_LONG, .n_in = 1,
     .in = {{.dtype = KILN_F32, .ndim = 4, .shape = {2, 33, 4, 64}, .grad = 1}},
     .fwd_tol = 1e-8, .bwd_tol = 1e-8},
};
const kiln_verify_group kiln_verify_group_rope =
    {.name = "rope", .cases = cases, .count = (int)(sizeof cases / sizeof cases[0])};
