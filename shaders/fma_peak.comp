// The device's FMA ceiling: every invocation runs ITERS x 288 independent fused multiply-adds
// (12 accumulator chains, deep enough to hide FMA latency on CPUs and GPUs, 24 rounds per
// loop iteration: lavapipe blends every loop-carried value once per iteration, and 8 rounds
// measured 14% lower) and writes one sum, so the time is pure arithmetic: the yardstick for
// the GEMM (docs/benchmarks.md).
// The values stay near 1 (a fixed point of a = a * m + c), never denormal or infinite.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "flat.glsl"

layout(std430, binding = 0) writeonly buffer Out { float outv[]; };
layout(push_constant) uniform Push { FMA_PEAK_PUSH } pc;

// the host counts the FMAs by engine/abi/kernel_abi.h: the loop below must do that many
#if KILN_ABI_VK_FMA_PEAK_CHAINS != 12 || KILN_ABI_VK_FMA_PEAK_ROUNDS != 24
#error "fma_peak.comp runs 12 chains of 24 rounds per iteration"
#endif

void main() {
    uint id = kiln_flat_id();
    float x = float(gl_LocalInvocationID.x) * 1e-3;
    float a0 = x, a1 = x + 1.0, a2 = x + 2.0, a3 = x + 3.0, a4 = x + 4.0, a5 = x + 5.0;
    float a6 = x + 6.0, a7 = x + 7.0, a8 = x + 8.0, a9 = x + 9.0, a10 = x + 10.0, a11 = x + 11.0;
    float m = 0.999 + x * 1e-6, c = 1e-3;
    for (uint i = 0u; i < pc.iters; i++) {
#define KILN_FMA12                                                                              \
    a0 = fma(a0, m, c); a1 = fma(a1, m, c); a2 = fma(a2, m, c); a3 = fma(a3, m, c);              \
    a4 = fma(a4, m, c); a5 = fma(a5, m, c); a6 = fma(a6, m, c); a7 = fma(a7, m, c);              \
    a8 = fma(a8, m, c); a9 = fma(a9, m, c); a10 = fma(a10, m, c); a11 = fma(a11, m, c);
        KILN_FMA12 KILN_FMA12 KILN_FMA12 KILN_FMA12 KILN_FMA12 KILN_FMA12 KILN_FMA12 KILN_FMA12
        KILN_FMA12 KILN_FMA12 KILN_FMA12 KILN_FMA12 KILN_FMA12 KILN_FMA12 KILN_FMA12 KILN_FMA12
        KILN_FMA12 KILN_FMA12 KILN_FMA12 KILN_FMA12 KILN_FMA12 KILN_FMA12 KILN_FMA12 KILN_FMA12
    }
    if (id < pc.n) outv[pc.off[0] + id] = ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7)) + ((a8 + a9) + (a10 + a11));
}
