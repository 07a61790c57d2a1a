/* CPU reductions to a scalar. Accumulates in double: the reference must not lose digits
 * that the GPU kernels' tree reductions keep. */
#include "cpu/cpu_internal.h"

kiln_status cpu_reduce(void *dev, const kiln_reduce_args *a) {
    (void)dev;
    const float *x = CPU_PTR(a->x, float);
    float *out = CPU_PTR(a->out, float);
    double s = 0;
    int64_t n = a->n;
    if (a->square) {
#pragma omp parallel for reduction(+ : s) if (n > CPU_PAR_MIN)
        for (int64_t i = 0; i < n; i++) s += (double)x[i] * x[i];
        out[0] += (float)s;
    } else {
#pragma omp parallel for reduction(+ : s) if (n > CPU_PAR_MIN)
        for (int64_t i = 0; i < n; i++) s += x[i];
        out[0] = a->alpha * (float)s;
    }
    return KILN_OK;
}
