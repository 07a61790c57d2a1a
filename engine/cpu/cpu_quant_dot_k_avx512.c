/* The K formats' dot products on x86-64 with AVX-512 (cpu_quant_dot_k_x86.h): the AVX2 code
 * with vpdpwssd in place of madd and add, 32 vector registers and three-input logic ops
 * (compiled to EVEX), and Q4_K in 512-bit registers. Measured against ggml's CPU backend on
 * one Zen 5 thread (scripts/bench_qmatmul.sh, GPT-2 small's MLP shapes), each paid: Q6_K
 * went from 0.93x to 1.05x of ggml, Q4_K from 0.84x to 0.89x with vpdpwssd alone. */
#include "cpu/cpu_quant_dot_impl.h"

#ifdef CPU_QDOT_X86
#include <immintrin.h>
#include <string.h>

#define K_TARGET "avx2,fma,f16c,avx512f,avx512vl,avx512bw,avx512vnni"
#define K_NAME(f) f##_avx512
#define K_DPWSSD(s, a, b) _mm256_dpwssd_epi32(s, a, b)
#define K_WIDE 1
#include "cpu/cpu_quant_dot_k_x86.h"
#endif
