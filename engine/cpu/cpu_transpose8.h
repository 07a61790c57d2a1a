/* An 8 x 8 transpose of floats in AVX registers, for the GEMM's packing (cpu_gemm_kernels.c)
 * and the GEMV's reading of B's rows as columns (cpu_gemv.c). x86-64 only. */
#ifndef KILN_CPU_TRANSPOSE8_H
#define KILN_CPU_TRANSPOSE8_H

#include <immintrin.h>

/* r[i] lane j becomes r[j] lane i. */
__attribute__((target("avx2,fma"))) static inline void cpu_transpose8(__m256 r[8]) {
    __m256 t[8], s[8];
    for (int i = 0; i < 4; i++) {
        t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    for (int h = 0; h < 2; h++) {
        s[4 * h + 0] = _mm256_shuffle_ps(t[4 * h + 0], t[4 * h + 2], 0x44);
        s[4 * h + 1] = _mm256_shuffle_ps(t[4 * h + 0], t[4 * h + 2], 0xEE);
        s[4 * h + 2] = _mm256_shuffle_ps(t[4 * h + 1], t[4 * h + 3], 0x44);
        s[4 * h + 3] = _mm256_shuffle_ps(t[4 * h + 1], t[4 * h + 3], 0xEE);
    }
    for (int i = 0; i < 4; i++) {
        r[i] = _mm256_permute2f128_ps(s[i], s[i + 4], 0x20);
        r[i + 4] = _mm256_permute2f128_ps(s[i], s[i + 4], 0x31);
    }
}

#endif
