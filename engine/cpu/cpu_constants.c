/* CPU kernels of the constants family: fill, the sinusoidal position table and the inf/NaN
 * check behind dynamic loss scaling. */
#include <math.h>
#include <string.h>

#include "cpu/cpu_f16.h"
#include "cpu/cpu_internal.h"

/* pe[t, 2i] = sin(t / 10000^(2i/C)), pe[t, 2i+1] = cos(t / 10000^(2i/C)), computed in
 * double: for t in the thousands the f32 angle alone would lose digits of the phase. */
kiln_status cpu_sinusoid(void *dev, const kiln_sinusoid_args *a) {
    if (a->dtype != KILN_F32) { /* an f16 table: computed in f32, rounded once (cpu_f16.h) */
        kiln_sinusoid_args w = *a;
        w.dtype = KILN_F32;
        cpu_widen s;
        cpu_widen_init(&s, a->dtype, "sinusoid");
        cpu_widen_operand(&s, &w.out, a->positions * a->channels, CPU_OUT);
        return cpu_widen_finish(&s, s.status ? s.status : cpu_sinusoid(dev, &w));
    }
    (void)dev;
    float *out = CPU_PTR(a->out, float);
    int64_t positions = a->positions, channels = a->channels;
#pragma omp parallel for if (positions * channels > CPU_PAR_MIN)
    for (int64_t t = 0; t < positions; t++) {
        for (int64_t c = 0; c < channels; c++) {
            int64_t pair = c / 2;
            double angle = (double)t / pow(10000.0, (double)(2 * pair) / (double)channels);
            out[t * channels + c] = (float)(c % 2 == 0 ? sin(angle) : cos(angle));
        }
    }
    return KILN_OK;
}

/* inf and NaN are exactly the values whose exponent bits are all ones, in both formats;
 * testing bits keeps the check immune to -ffast-math assumptions about NaN. */
kiln_status cpu_check_finite(void *dev, const kiln_finite_args *a) {
    (void)dev;
    int64_t n = a->n;
    int bad = 0;
    if (a->dtype == KILN_F32) {
        const uint32_t *x = CPU_PTR(a->x, uint32_t);
#pragma omp parallel for reduction(| : bad) if (n > CPU_PAR_MIN)
        for (int64_t i = 0; i < n; i++) bad |= (x[i] & 0x7f800000u) == 0x7f800000u;
    } else if (a->dtype == KILN_F16) {
        const uint16_t *x = CPU_PTR(a->x, uint16_t);
#pragma omp parallel for reduction(| : bad) if (n > CPU_PAR_MIN)
        for (int64_t i = 0; i < n; i++) bad |= (x[i] & 0x7c00u) == 0x7c00u;
    } else {
        return kiln_set_error(KILN_ERR_DTYPE, "check_finite: x must be f32 or f16, got %s", kiln_dtype_name(a->dtype));
    }
    if (bad) CPU_PTR(a->flag, int32_t)[0] = 1;
    return KILN_OK;
}

kiln_status cpu_fill(void *dev, const kiln_fill_args *a) {
    (void)dev;
    int64_t n = a->n;
    /* zero is all-zero bits in every dtype (not -0.0f): memset, the common case of
     * zero-filled gradients */
    if (a->value == 0.0f && !signbit(a->value)) {
        memset(CPU_PTR(a->dst, char), 0, (size_t)n * kiln_dtype_size(a->dtype));
    } else if (a->dtype == KILN_F32) {
        float *p = CPU_PTR(a->dst, float), v = a->value;
        for (int64_t i = 0; i < n; i++) p[i] = v;
    } else if (a->dtype == KILN_F16) {
        uint16_t *p = CPU_PTR(a->dst, uint16_t), v = kiln_f32_to_f16(a->value);
        for (int64_t i = 0; i < n; i++) p[i] = v;
    } else {
        int32_t *p = CPU_PTR(a->dst, int32_t), v = (int32_t)a->value;
        for (int64_t i = 0; i < n; i++) p[i] = v;
    }
    return KILN_OK;
}
