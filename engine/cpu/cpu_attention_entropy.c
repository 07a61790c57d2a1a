/* CPU attention entropy per head: -sum p log p over the keys, averaged over batch and
 * queries. A diagnostic of attention collapse (entropy near 0) and a regularizer.
 *
 * Probabilities that are not positive contribute 0 and receive no gradient: p == 0 is the
 * 0 log 0 = 0 convention (masked keys), and a negative p is not a probability. */
#include <math.h>

#include "cpu/cpu_f16.h"
#include "cpu/cpu_internal.h"

kiln_status cpu_entropy_fwd(void *dev, const kiln_entropy_args *a) {
    if (a->dtype != KILN_F32) { /* f16 p: on a widened copy (cpu_f16.h); out is f32 */
        kiln_entropy_args w = *a;
        w.dtype = KILN_F32;
        cpu_widen s;
        cpu_widen_init(&s, a->dtype, "entropy_fwd");
        cpu_widen_operand(&s, &w.p, a->batch * a->heads * a->tq * a->tk, CPU_IN);
        return cpu_widen_finish(&s, s.status ? s.status : cpu_entropy_fwd(dev, &w));
    }
    (void)dev;
    const float *p = CPU_PTR(a->p, float);
    float *out = CPU_PTR(a->out, float);
    const int64_t heads = a->heads, per_bh = a->tq * a->tk; /* one (b, h) block */
    const double norm = 1.0 / (double)(a->batch * a->tq);
#pragma omp parallel for if (a->batch * heads * per_bh > CPU_PAR_MIN)
    for (int64_t h = 0; h < heads; h++) {
        double s = 0;
        for (int64_t b = 0; b < a->batch; b++) {
            const float *blk = p + (b * heads + h) * per_bh;
            for (int64_t e = 0; e < per_bh; e++) {
                double v = blk[e];
                if (v > 0) s += v * log(v);
            }
        }
        out[h] = (float)(-s * norm);
    }
    return KILN_OK;
}

/* dp += dout[h] * -(log p + 1) / (batch * tq), 0 where p <= 0. */
kiln_status cpu_entropy_bwd(void *dev, const kiln_entropy_args *a) {
    if (a->dtype != KILN_F32) { /* f16 p and dp: on widened copies (cpu_f16.h); dout is f32 */
        const int64_t n = a->batch * a->heads * a->tq * a->tk;
        kiln_entropy_args w = *a;
        w.dtype = KILN_F32;
        cpu_widen s;
        cpu_widen_init(&s, a->dtype, "entropy_bwd");
        cpu_widen_operand(&s, &w.p, n, CPU_IN);
        cpu_widen_operand(&s, &w.dp, n, CPU_INOUT);
        return cpu_widen_finish(&s, s.status ? s.status : cpu_entropy_bwd(dev, &w));
    }
    (void)dev;
    const float *p = CPU_PTR(a->p, float), *dout = CPU_PTR(a->dout, float);
    float *dp = CPU_PTR(a->dp, float);
    const int64_t heads = a->heads, per_bh = a->tq * a->tk, blocks = a->batch * heads;
    const double norm = 1.0 / (double)(a->batch * a->tq);
#pragma omp parallel for if (blocks * per_bh > CPU_PAR_MIN)
    for (int64_t bh = 0; bh < blocks; bh++) {
        const double coef = -(double)dout[bh % heads] * norm;
        const float *pb = p + bh * per_bh;
        float *db = dp + bh * per_bh;
        for (int64_t e = 0; e < per_bh; e++) {
            double v = pb[e];
            if (v > 0) db[e] += (float)(coef * (log(v) + 1.0));
        }
    }
    return KILN_OK;
}
