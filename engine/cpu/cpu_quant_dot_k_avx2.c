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
