/* CPU activations: y = f(x) and dx += dy * f'(x), elementwise.
 *
 * GELU is the tanh approximation GPT-2 trained with (and Hugging Face calls "gelu_new"):
 *   f(x) = 0.5 x (1 + tanh(u)),  u = sqrt(2/pi) (x + 0.044715 x^3).
 * Since 1 + tanh(u) = 2 sigmoid(2u), it is computed as f(x) = x sigmoid(2u), and with
 * s = sigmoid(2u) (so 1 - tanh^2 = 4 s (1 - s)):
 *   f'(x) = s + 2 x s (1 - s) u'(x),  u'(x) = sqrt(2/pi) (1 + 3 * 0.044715 x^2).
 * The same function as the tanh form, but without its cancellation in 1 + tanh(u) for
 * negative x, and with cpu_sigmoid2 (cpu_vmath.h) instead of libm's scalar tanhf, so the
 * loops vectorize. SiLU is x sigmoid(x), with f' = s (1 + x (1 - s)).
 *
 * u is rounded exactly as PyTorch's CPU kernel rounds it (x^3 first, then the sum): u is
 * what amplifies rounding for |x| of a few units (the sigmoid of 2u at -6.5 moves by
 * 6.5 ulp per ulp of u), so sharing its rounding keeps the two within a few ulp.
 *
 * Each kind has its own loop over a block of elements: no per-element dispatch, and a
 * body the compiler can vectorize. Blocks are the unit of OpenMP work. */
#include <math.h>

#include "cpu/cpu_f16.h"
#include "cpu/cpu_internal.h"
#include "cpu/cpu_vmath.h"

#define GELU_K 0.7978845608028654f /* sqrt(2 / pi) */
#define GELU_C 0.044715f

/* Elements per OpenMP work item. */
#define ACT_BLOCK 4096
/* GELU and SiLU cost an exponential and a division per element (~30 flops): worth a
 * thread at a smaller size than memory-bound kernels. ReLU-type kernels use CPU_PAR_MIN. */
#define ACT_SMOOTH_PAR_MIN 16384

CPU_VECTOR_CLONES static void gelu_fwd(const float *x, float *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        const float v = x[i];
        const float u = GELU_K * (v + GELU_C * (v * v * v));
        y[i] = v * cpu_sigmoid2(2.0f * u).s;
    }
}

CPU_VECTOR_CLONES static void gelu_bwd(const float *x, const float *dy, float *dx, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        const float v = x[i];
        const float u = GELU_K * (v + GELU_C * (v * v * v));
        const float du = GELU_K * (1.0f + 3.0f * GELU_C * v * v);
        const cpu_sigmoid_pair p = cpu_sigmoid2(2.0f * u);
        dx[i] += dy[i] * (p.s + 2.0f * v * p.s * p.one_minus_s * du);
    }
}

CPU_VECTOR_CLONES static void silu_fwd(const float *x, float *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = x[i] * cpu_sigmoid2(x[i]).s;
}

CPU_VECTOR_CLONES static void silu_bwd(const float *x, const float *dy, float *dx, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        const cpu_sigmoid_pair p = cpu_sigmoid2(x[i]);
        dx[i] += dy[i] * (p.s * (1.0f + x[i] * p.one_minus_s));
    }
}

/* ReLU's kink at 0 takes the derivative 0, as PyTorch does. The derivative multiplies dy
 * (rather than selecting it) so a non-finite dy poisons dx on both sides of the kink. */
static void relu_fwd(const float *x, float *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = cpu_select(x[i] > 0.0f, x[i], 0.0f);
}

static void relu_bwd(const float *x, const float *dy, float *dx, int64_t n) {
    for (int64_t i = 0; i < n; i++) dx[i] += dy[i] * cpu_select(x[i] > 0.0f, 1.0f, 0.0f);
}

static void relu2_fwd(const float *x, float *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = cpu_select(x[i] > 0.0f, x[i] * x[i], 0.0f);
}

static void relu2_bwd(const float *x, const float *dy, float *dx, int64_t n) {
    for (int64_t i = 0; i < n; i++) dx[i] += dy[i] * cpu_select(x[i] > 0.0f, 2.0f * x[i], 0.0f);
}

static void sqrt_fwd(const float *x, float *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = sqrtf(x[i]);
}

static int known_kind(int kind, int with_sqrt) {
    return (kind >= KILN_ACT_GELU && kind <= KILN_ACT_RELU2) || (with_sqrt && kind == KILN_ACT_SQRT);
}

/* y = f(x) over one block. */
static void act_fwd_block(int kind, const float *x, float *y, int64_t n) {
    switch (kind) {
    case KILN_ACT_GELU: gelu_fwd(x, y, n); break;
    case KILN_ACT_RELU: relu_fwd(x, y, n); break;
    case KILN_ACT_SILU: silu_fwd(x, y, n); break;
    case KILN_ACT_RELU2: relu2_fwd(x, y, n); break;
    default: sqrt_fwd(x, y, n); break; /* KILN_ACT_SQRT */
    }
}

/* dx += dy * f'(x) over one block. */
static void act_bwd_block(int kind, const float *x, const float *dy, float *dx, int64_t n) {
    switch (kind) {
    case KILN_ACT_GELU: gelu_bwd(x, dy, dx, n); break;
    case KILN_ACT_RELU: relu_bwd(x, dy, dx, n); break;
    case KILN_ACT_SILU: silu_bwd(x, dy, dx, n); break;
    default: relu2_bwd(x, dy, dx, n); break; /* KILN_ACT_RELU2 */
    }
}

static int64_t par_min(int kind) {
    return kind == KILN_ACT_GELU || kind == KILN_ACT_SILU ? ACT_SMOOTH_PAR_MIN : CPU_PAR_MIN;
}

kiln_status cpu_act_fwd(void *dev, const kiln_act_args *a) {
    if (a->dtype != KILN_F32) { /* f16: on widened copies (cpu_f16.h) */
        kiln_act_args w = *a;
        w.dtype = KILN_F32;
        cpu_widen s;
        cpu_widen_init(&s, a->dtype, "act_fwd");
        cpu_widen_operand(&s, &w.x, a->n, CPU_IN);
        cpu_widen_operand(&s, &w.y, a->n, CPU_OUT);
        return cpu_widen_finish(&s, s.status ? s.status : cpu_act_fwd(dev, &w));
    }
    (void)dev;
    if (!known_kind(a->kind, 1))
        return kiln_set_error(KILN_ERR_ARGUMENT, "cpu act_fwd: unknown activation kind %d", a->kind);
    const float *x = CPU_PTR(a->x, float);
    float *y = CPU_PTR(a->y, float);
    const int kind = a->kind;
    const int64_t n = a->n, blocks = (n + ACT_BLOCK - 1) / ACT_BLOCK;
    const int threads = cpu_use_threads(n, par_min(kind)); /* outside the pragma: builds without OpenMP use it too */
    (void)threads;
#pragma omp parallel for if (threads)
    for (int64_t b = 0; b < blocks; b++) {
        const int64_t i0 = b * ACT_BLOCK, len = n - i0 < ACT_BLOCK ? n - i0 : ACT_BLOCK;
        act_fwd_block(kind, x + i0, y + i0, len);
    }
    return KILN_OK;
}

kiln_status cpu_act_bwd(void *dev, const kiln_act_args *a) {
    if (a->dtype != KILN_F32) { /* f16: on widened copies (cpu_f16.h) */
        kiln_act_args w = *a;
        w.dtype = KILN_F32;
        cpu_widen s;
        cpu_widen_init(&s, a->dtype, "act_bwd");
        cpu_widen_operand(&s, &w.x, a->n, CPU_IN);
        cpu_widen_operand(&s, &w.dy, a->n, CPU_IN);
        cpu_widen_operand(&s, &w.dx, a->n, CPU_INOUT);
        return cpu_widen_finish(&s, s.status ? s.status : cpu_act_bwd(dev, &w));
    }
    (void)dev;
    if (!known_kind(a->kind, 0))
        return kiln_set_error(KILN_ERR_ARGUMENT, "cpu act_bwd: activation kind %d has no backward", a->kind);
    const float *x = CPU_PTR(a->x, float), *dy = CPU_PTR(a->dy, float);
    float *dx = CPU_PTR(a->dx, float);
    const int kind = a->kind;
    const int64_t n = a->n, blocks = (n + ACT_BLOCK - 1) / ACT_BLOCK;
    const int threads = cpu_use_threads(n, par_min(kind)); /* outside the pragma: builds without OpenMP use it too */
    (void)threads;
#pragma omp parallel for if (threads)
    for (int64_t b = 0; b < blocks; b++) {
        const int64_t i0 = b * ACT_BLOCK, len = n - i0 < ACT_BLOCK ? n - i0 : ACT_BLOCK;
        act_bwd_block(kind, x + i0, dy + i0, dx + i0, len);
    }
    return KILN_OK;
}
