/* CPU cross-entropy from logits: a fused, max-subtracted log-softmax with label smoothing
 * and ignore_index, forward and backward. The forward saves each row's log-sum-exp so the
 * backward rebuilds softmax(z) = exp(z - lse) without a second reduction.
 *
 * The exponentials are cpu_expf (within 1 ulp, vectorized) of the f32 difference z - zmax,
 * summed in double: the log-sum-exp is then good to a few f32 ulp, as the f32 lse it is
 * stored in. */
#include <math.h>

#include "cpu/cpu_f16.h"
#include "cpu/cpu_internal.h"
#include "cpu/cpu_vmath.h"

/* Exponentials computed per pass into a stack buffer before they are summed. */
#define XENT_CHUNK 256

/* log sum_v exp(z_v) of one row, and sum_v z_v into *sum_z. */
CPU_VECTOR_CLONES static double row_lse(const float *z, int64_t vocab, double *sum_z) {
    const float zmax = cpu_max_f32(z, vocab);
    double sum_exp = 0;
    for (int64_t v0 = 0; v0 < vocab; v0 += XENT_CHUNK) {
        float e[XENT_CHUNK];
        const int64_t len = vocab - v0 < XENT_CHUNK ? vocab - v0 : XENT_CHUNK;
        for (int64_t v = 0; v < len; v++) e[v] = cpu_expf(z[v0 + v] - zmax);
        sum_exp += cpu_sum_f64(e, len);
    }
    *sum_z = cpu_sum_f64(z, vocab);
    return zmax + log(sum_exp);
}

/* dz_v += coef * (exp(z_v - lse) - uniform) for every v of one row. */
CPU_VECTOR_CLONES static void row_softmax_grad(float *dz, const float *z, int64_t vocab, float lse,
                                               float coef, float uniform) {
    for (int64_t v = 0; v < vocab; v++) dz[v] += coef * (cpu_expf(z[v] - lse) - uniform);
}

static int target_valid(int32_t t, int64_t vocab) { return t >= 0 && (int64_t)t < vocab; }

kiln_status cpu_xent_fwd(void *dev, const kiln_xent_args *a) {
    if (a->dtype != KILN_F32) { /* f16 logits: on a widened copy (cpu_f16.h); the rest is f32 */
        kiln_xent_args w = *a;
        w.dtype = KILN_F32;
        cpu_widen s;
        cpu_widen_init(&s, a->dtype, "xent_fwd");
        cpu_widen_operand(&s, &w.logits, a->rows * a->vocab, CPU_IN);
        return cpu_widen_finish(&s, s.status ? s.status : cpu_xent_fwd(dev, &w));
    }
    (void)dev;
    const float *logits = CPU_PTR(a->logits, float);
    const int32_t *targets = CPU_PTR(a->targets, int32_t);
    float *lse_out = CPU_PTR(a->lse, float);
    const int64_t rows = a->rows, vocab = a->vocab;
    const double s = a->smoothing;
    double total = 0, count = 0;
    int64_t bad_row = rows; /* the first row with an out-of-range target, or rows */
#pragma omp parallel for reduction(+ : total, count) reduction(min : bad_row) if (cpu_use_threads(rows * vocab, CPU_PAR_MIN / 4))
    for (int64_t r = 0; r < rows; r++) {
        const int32_t t = targets[r];
        lse_out[r] = 0.0f;
        if (t == a->ignore_index) continue;
        if (!target_valid(t, vocab)) {
            if (r < bad_row) bad_row = r;
            continue;
        }
        const float *z = logits + r * vocab;
        double sum_z;
        const double lse = row_lse(z, vocab, &sum_z);
        lse_out[r] = (float)lse;
        total += (1.0 - s) * (lse - z[t]) + s * (lse - sum_z / (double)vocab);
        count += 1;
    }
    if (bad_row < rows)
        return kiln_set_error(KILN_ERR_RANGE,
                              "cross_entropy: target %d at row %lld is outside [0, %lld) and is not "
                              "ignore_index (%d)",
                              targets[bad_row], (long long)bad_row, (long long)vocab, a->ignore_index);
    /* no valid row: the loss is 0, not 0/0 */
    CPU_PTR(a->loss, float)[0] = count > 0 ? (float)(total / count) : 0.0f;
    CPU_PTR(a->count, float)[0] = (float)count;
    return KILN_OK;
}

/* dlogits[r, v] += dloss / max(count, 1) * (softmax(z)[v] - (1-s)[v == t] - s / vocab). */
kiln_status cpu_xent_bwd(void *dev, const kiln_xent_args *a) {
    if (a->dtype != KILN_F32) { /* f16 logits and dlogits: on widened copies (cpu_f16.h) */
        kiln_xent_args w = *a;
        w.dtype = KILN_F32;
        cpu_widen s;
        cpu_widen_init(&s, a->dtype, "xent_bwd");
        cpu_widen_operand(&s, &w.logits, a->rows * a->vocab, CPU_IN);
        cpu_widen_operand(&s, &w.dlogits, a->rows * a->vocab, CPU_INOUT);
        return cpu_widen_finish(&s, s.status ? s.status : cpu_xent_bwd(dev, &w));
    }
    (void)dev;
    const float *logits = CPU_PTR(a->logits, float), *lse = CPU_PTR(a->lse, float);
    const int32_t *targets = CPU_PTR(a->targets, int32_t);
    float *dlogits = CPU_PTR(a->dlogits, float);
    const int64_t rows = a->rows, vocab = a->vocab;
    const float count = CPU_PTR(a->count, float)[0];
    const float coef = CPU_PTR(a->dloss, float)[0] / (count > 1.0f ? count : 1.0f);
    const float s = a->smoothing, uniform = a->smoothing / (float)vocab;
#pragma omp parallel for if (cpu_use_threads(rows * vocab, CPU_PAR_MIN / 4))
    for (int64_t r = 0; r < rows; r++) {
        const int32_t t = targets[r];
        /* ignored rows get nothing; an invalid target already failed the forward */
        if (t == a->ignore_index || !target_valid(t, vocab)) continue;
        const float *z = logits + r * vocab;
        float *dz = dlogits + r * vocab;
        const float lse_r = lse[r], dz_t = dz[t];
        row_softmax_grad(dz, z, vocab, lse_r, coef, uniform);
        /* the target's element, redone from its old value with the one-hot term (kept out
         * of the loop above so that it vectorizes) */
        dz[t] = dz_t + coef * (cpu_expf(z[t] - lse_r) - uniform - (1.0f - s));
    }
    return KILN_OK;
}
