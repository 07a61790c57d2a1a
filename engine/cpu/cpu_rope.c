/* CPU rotary position embeddings (kiln_rope_args, core/backend.h), forward and backward.
 *
 * The reference: each (position, pair) angle and its cosine and sine are taken in double,
 * once per call into a [seq, dim/2] table shared by the batch and the heads, and each
 * rotated pair is formed in double and rounded once. The devices form the angle in f32, as
 * PyTorch and llama.cpp do; how far that moves a result is in engine/verify/cases_rope.c. */
#include <math.h>
#include <stdlib.h>

#include "cpu/cpu_f16.h"
#include "cpu/cpu_internal.h"

/* cos and sin of every (t, i), interleaved: cs[2 (t half + i)] = cos, + 1 = sign * sin;
 * the pairs' inverse frequencies after them (cs[2 seq half + i]). */
static double *rope_table(const kiln_rope_args *a, double sign) {
    const int64_t half = a->dim / 2, seq = a->seq;
    double *cs = malloc((size_t)(2 * seq * half + half) * sizeof *cs);
    if (!cs) return NULL;
    double *inv = cs + 2 * seq * half;
    const float *factors = a->freq_factors.buf ? CPU_PTR(a->freq_factors, float) : NULL;
    for (int64_t i = 0; i < half; i++)
        inv[i] = pow((double)a->base, -(double)(2 * i) / (double)a->dim) / (factors ? (double)factors[i] : 1.0);
    /* an entry (a double cos and sin) costs about what 40 elements of a memory-bound
     * kernel do, the unit of CPU_PAR_MIN */
    const int threads = cpu_use_threads(seq * half * 40, CPU_PAR_MIN);
    (void)threads;
#pragma omp parallel for if (threads)
    for (int64_t t = 0; t < seq; t++) {
        for (int64_t i = 0; i < half; i++) {
            double angle = (double)(a->pos0 + t) * inv[i];
            cs[2 * (t * half + i)] = cos(angle);
            cs[2 * (t * half + i) + 1] = sign * sin(angle);
        }
    }
    return cs;
}

/* out (+)= R(sign * angle) in over f32 data. */
static kiln_status rope_f32(const kiln_rope_args *a, kiln_ref in_ref, kiln_ref out_ref, double sign, int accumulate) {
    double *cs = rope_table(a, sign);
    if (!cs) return kiln_set_error(KILN_ERR_MEMORY, "cpu rope: no memory for a %lld x %lld angle table",
                                   (long long)a->seq, (long long)(a->dim / 2));
    const float *in = CPU_PTR(in_ref, float);
    float *out = CPU_PTR(out_ref, float);
    const int64_t half = a->dim / 2, rows = a->batch * a->seq;
    /* pair i is channels (lo, lo + step): (2i, 2i + 1) or (i, i + half) */
    const int adjacent = a->layout == KILN_ABI_ROPE_ADJACENT;
    const int64_t step = adjacent ? 1 : half;
    const int threads = cpu_use_threads(rows * a->heads * a->dim, CPU_PAR_MIN);
    (void)threads;
#pragma omp parallel for if (threads)
    for (int64_t r = 0; r < rows; r++) {
        const double *row_cs = cs + 2 * (r % a->seq) * half;
        for (int64_t h = 0; h < a->heads; h++) {
            const int64_t base = (r * a->heads + h) * a->dim;
            for (int64_t i = 0; i < half; i++) {
                const int64_t lo = base + (adjacent ? 2 * i : i);
                const double c = row_cs[2 * i], s = row_cs[2 * i + 1];
                const double x0 = in[lo], x1 = in[lo + step];
                const double y0 = x0 * c - x1 * s, y1 = x0 * s + x1 * c;
                out[lo] = (float)(accumulate ? out[lo] + y0 : y0);
                out[lo + step] = (float)(accumulate ? out[lo + step] + y1 : y1);
            }
        }
    }
    free(cs);
    return KILN_OK;
}

/* f32 directly; f16 on widened copies (cpu_f16.h). The factors are f32 either way. */
static kiln_status rope_run(const kiln_rope_args *a, kiln_ref in, kiln_ref out, double sign, int accumulate,
                            const char *name) {
    const int64_t n = a->batch * a->seq * a->heads * a->dim;
    if (n == 0) return KILN_OK;
    if (a->dtype == KILN_F32) return rope_f32(a, in, out, sign, accumulate);
    cpu_widen w;
    cpu_widen_init(&w, a->dtype, name);
    cpu_widen_operand(&w, &in, n, CPU_IN);
    cpu_widen_operand(&w, &out, n, accumulate ? CPU_INOUT : CPU_OUT);
    return cpu_widen_finish(&w, w.status ? w.status : rope_f32(a, in, out, sign, accumulate));
}

kiln_status cpu_rope_fwd(void *dev, const kiln_rope_args *a) {
    (void)dev;
    return rope_run(a, a->x, a->y, 1.0, 0, "rope_fwd");
}

kiln_status cpu_rope_bwd(void *dev, const kiln_rope_args *a) {
    (void)dev;
    return rope_run(a, a->dy, a->dx, -1.0, a->accumulate, "rope_bwd");
}
