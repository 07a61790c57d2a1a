/* The 32-value formats' dot products on x86-64 with AVX2 (cpu_quant_dot_x86.h). */
#include "cpu/cpu_quant_dot_impl.h"

#ifdef CPU_QDOT_X86
#include <immintrin.h>
#include <string.h>

#define B_TARGET "avx2,fma,f16c"
#define B_NAME(f) f##_avx2
#define B_DOTS(u, s) _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1))
#include "cpu/cpu_quant_dot_x86.h"
#endif
