/* The 32-value formats' dot products on x86-64 with AVX-512 VNNI (cpu_quant_dot_x86.h): the
 * AVX2 code with one vpdpbusd in place of maddubs and madd, compiled to EVEX. On one Zen 5
 * thread against ggml's CPU backend (scripts/bench_qmatmul.sh, weights in cache) Q5_0 went
 * from 0.82x to 0.93x of ggml and Q5_1 from 0.80x to 0.89x; the integer sums, and so the
 * results' bits, are those of the AVX2 code. */
#include "cpu/cpu_quant_dot_impl.h"

#ifdef CPU_QDOT_X86
#include <immintrin.h>
#include <string.h>

#define B_TARGET "avx2,fma,f16c,avx512f,avx512vl,avx512bw,avx512vnni"
#define B_NAME(f) f##_avx512
#define B_DOTS(u, s) _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, s)
#include "cpu/cpu_quant_dot_x86.h"
#endif
