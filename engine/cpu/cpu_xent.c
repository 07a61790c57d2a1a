/* CPU cross-entropy from logits: a fused, max-subtracted log-softmax with label smoothing
 * and ignore_index, forward and backward. The forward saves each row's log-sum-exp so the
 * backward rebuilds softmax(z) = exp(z - lse) without a second reduction. */
#include <math.h>

#include "cpu/cpu_internal.h"

static int target_valid(int32_t t, int64_t vocab) { return t >= 0 && (int64_t)t < vocab; }

kiln_status cpu_xent_fwd(void *dev, const kiln_xent_args *a) {
    (void)dev;
    const float *logits = CPU_PTR(a->logits, float);
    const int32_t *targets = CPU_PTR(a->targets, int32_t);
    float *lse_out = CPU_PTR(a->lse, float);
    const int64_t rows = a->rows, vocab = a->vocab;
    const double s = a->smoothing;
    double total = 0, count = 0;
    int64_t bad_row = rows; /* the first row with an out-of-range target, or rows */
#pragma omp parallel for reduction(+ : total, count) reduction(min : bad_row) if (rows * vocab > CPU_PAR_MIN)
    for (int64_t r = 0; r < rows; r++) {
        const int32_t t = targets[r];
        lse_out[r] = 0.0f;
        if (t == a->ignore_index) continue;
        if (!target_valid(t, vocab)) {
            if (r < bad_row) bad_row = r;
            continue;
        }
        const float *z = logits + r * vocab;
        float zmax = -INFINITY;
        for (int64_t v = 0; v < vocab; v++)
            if (z[v] > zmax) zmax = z[v];
        double sum_exp = 0, sum_z = 0;
        for (int64_t v = 0; v < vocab; v++) {
            sum_exp += exp((double)z[v] - zmax);
            sum_z += z[v];
        }
        const double lse = zmax + log(sum_exp);
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
    (void)dev;
    const float *logits = CPU_PTR(a->logits, float), *lse = CPU_PTR(a->lse, float);
    const int32_t *targets = CPU_PTR(a->targets, int32_t);
    float *dlogits = CPU_PTR(a->dlogits, float);
    const int64_t rows = a->rows, vocab = a->vocab;
    const float count = CPU_PTR(a->count, float)[0];
    const float coef = CPU_PTR(a->dloss, float)[0] / (count > 1.0f ? count : 1.0f);
    const float s = a->smoothing, uniform = a->smoothing / (float)vocab;
#pragma omp parallel for if (rows * vocab > CPU_PAR_MIN)
    for (int64_t r = 0; r < rows; r++) {
        const int32_t t = targets[r];
        /* ignored rows get nothing; an invalid target already failed the forward */
        if (t == a->ignore_index || !target_valid(t, vocab)) continue;
        const float *z = logits + r * vocab;
        float *dz = dlogits + r * vocab;
        for (int64_t v = 0; v < vocab; v++) {
            float g = expf(z[v] - lse[r]) - uniform - (v == t ? 1.0f - s : 0.0f);
            dz[v] += coef * g;
        }
    }
    return KILN_OK;
}
