/* CPU reductions to a scalar. Accumulates in double: the reference must not lose digits
 * that the GPU kernels' tree reductions keep.
 *
 * The input is cut into REDUCE_CHUNKS equal chunks whatever the thread count; each chunk
 * is summed with independent double lanes (cpu_vmath.h: a single running sum is a chain
 * of dependent additions, 4 cycles each) and the chunk sums are added in order. So the
 * result is the same bits on one thread or many, and threads only share out the chunks. */
#include "cpu/cpu_f16.h"
#include "cpu/cpu_internal.h"
#include "cpu/cpu_vmath.h"

#define REDUCE_CHUNKS 64

kiln_status cpu_reduce(void *dev, const kiln_reduce_args *a) {
    if (a->dtype != KILN_F32) { /* f16 x: on a widened copy (cpu_f16.h); out is f32 */
        kiln_reduce_args w = *a;
        w.dtype = KILN_F32;
        cpu_widen s;
        cpu_widen_init(&s, a->dtype, "reduce");
        cpu_widen_operand(&s, &w.x, a->n, CPU_IN);
        return cpu_widen_finish(&s, s.status ? s.status : cpu_reduce(dev, &w));
    }
    (void)dev;
    const float *x = CPU_PTR(a->x, float);
    float *out = CPU_PTR(a->out, float);
    const int64_t n = a->n, per = (n + REDUCE_CHUNKS - 1) / REDUCE_CHUNKS;
    const int square = a->square;
    double part[REDUCE_CHUNKS];
#pragma omp parallel for if (cpu_use_threads(n, CPU_PAR_MIN))
    for (int c = 0; c < REDUCE_CHUNKS; c++) {
        const int64_t i0 = c * per, len = n - i0 < per ? n - i0 : per;
        part[c] = len <= 0 ? 0.0 : square ? cpu_dot_f64(x + i0, x + i0, len) : cpu_sum_f64(x + i0, len);
    }
    double s = 0;
    for (int c = 0; c < REDUCE_CHUNKS; c++) s += part[c];
    if (square)
        out[0] += (float)s;
    else
        out[0] = a->alpha * (float)s;
    return KILN_OK;
}
