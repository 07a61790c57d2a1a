/* The K formats' dot products on x86-64 with AVX2 (cpu_quant_dot_k_x86.h). */
#include "cpu/cpu_quant_dot_impl.h"

#ifdef CPU_QDOT_X86
#include <immintrin.h>
#include <string.h>

#define K_TARGET "avx2,fma,f16c"
#define K_NAME(f) f##_avx2
#define K_DPWSSD(s, a, b) _mm256_add_epi32(s, _mm256_madd_epi16(a, b))
#include "cpu/cpu_quant_dot_k_x86.h"
#endif

#ifdef CPU_QDOT_X86
/* Q8_K with AVX2, ggml's quantize_row_q8_K_ref step for step: the first value of largest
 * magnitude sets iscale = -127 / max; q = nearest_int(iscale x) (one f32 multiply, rounded to
 * nearest even by cvtps, as nearest_int's sum with 1.5 * 2^23 rounds it), at most 127;
 * d = 1 / iscale; an all-zero block is all zero bytes (kiln_quantize_row's). The same bytes,
 * at a fraction of the scalar loop's cost: decoding rounds a row of activations per
 * product. */
__attribute__((target("avx2,fma,f16c"))) void cpu_q8k_quantize_avx2(const float *x, int64_t blocks, cpu_q8k *out) {
    const __m256 sign = _mm256_set1_ps(-0.0f);
    for (int64_t b = 0; b < blocks; b++, x += KILN_QK_K) {
        cpu_q8k *o = out + b;
        __m256 amax8 = _mm256_setzero_ps();
        for (int j = 0; j < KILN_QK_K; j += 8) amax8 = _mm256_max_ps(amax8, _mm256_andnot_ps(sign, _mm256_loadu_ps(x + j)));
        __m128 m = _mm_max_ps(_mm256_castps256_ps128(amax8), _mm256_extractf128_ps(amax8, 1));
        m = _mm_max_ps(m, _mm_movehl_ps(m, m));
        const float amax = _mm_cvtss_f32(_mm_max_ss(m, _mm_movehdup_ps(m)));
        if (!(amax > 0.0f)) {
            memset(o, 0, sizeof *o);
            continue;
        }
        int first = 0;
        for (int j = 0; j < KILN_QK_K; j += 8) {
            const __m256 ax = _mm256_andnot_ps(sign, _mm256_loadu_ps(x + j));
            const int hit = _mm256_movemask_ps(_mm256_cmp_ps(ax, _mm256_set1_ps(amax), _CMP_EQ_OQ));
            if (hit) {
                first = j + __builtin_ctz((unsigned)hit);
                break;
            }
        }
        const float iscale = -127.f / x[first];
        const __m256 scale = _mm256_set1_ps(iscale);
        const __m256i top = _mm256_set1_epi32(127), order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
        for (int j = 0; j < KILN_QK_K; j += 32) {
            __m256i q[4];
            for (int i = 0; i < 4; i++)
                q[i] = _mm256_min_epi32(_mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + j + 8 * i), scale)), top);
            const __m256i bytes = _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3]));
            _mm256_storeu_si256((__m256i *)(void *)(o->q + j), _mm256_permutevar8x32_epi32(bytes, order));
        }
        for (int g = 0; g < KILN_QK_K / 16; g++) {
            int sum = 0;
            for (int i = 0; i < 16; i++) sum += o->q[16 * g + i];
            o->bsums[g] = (int16_t)sum;
        }
        o->d = 1 / iscale;
    }
}
#endif
