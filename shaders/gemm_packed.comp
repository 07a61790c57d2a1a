// GEMM for CPU devices (lavapipe, SwiftShader), on operands packed by gemm_pack.comp.
//
// A CPU driver runs each invocation as one SIMD lane, and its memory accesses are
// per-lane scalar operations: a buffer load costs as much as 30 FMAs, while an RGBA32F
// texel fetch brings four floats for less (see docs/benchmarks.md). So this kernel reads
// only texels, and each invocation computes a large R x C block of C (16 x 24: 384
// accumulators, most of them in spilled stack slots that the CPU reads as whole vectors)
// so that each fetched value feeds 16 or 24 FMAs. K advances 8 at a time with the k loop
// innermost per accumulator, so a spilled accumulator is loaded and stored once per 8 FMAs.
// (16 x 16 and 24 x 16 blocks measured 3-5% slower, 24 x 24 slower still.)
// R and C are compile-time constants: the loops must unroll before the driver sees them.
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"

// the block and the k per iteration: engine/abi/kernel_abi.h, which vk_gemm.c pads the
// panels by
const uint R = KILN_ABI_VK_PACKED_ROWS, C = KILN_ABI_VK_PACKED_COLS, KSTEP = KILN_ABI_VK_PACKED_KSTEP;

layout(constant_id = 0) const uint WG = 8;
layout(local_size_x_id = 0) in;

layout(binding = 0) uniform samplerBuffer pa;  // [batch][Mp / R][Kp / 4][R]
layout(binding = 1) uniform samplerBuffer pb;  // [batch][Np / C][Kp][C / 4] (C a multiple of 4)
layout(std430, binding = 2) buffer Cbuf { float c[]; };
layout(std430, binding = 3) readonly buffer Bias { float bias[]; };
layout(push_constant) uniform Push { GEMM_PACKED_PUSH } pc;

void main() {
    uint id = kiln_group_id() * WG + gl_LocalInvocationID.x;
    uint nb = pc.np / C, mb = pc.mp / R;
    if (id >= nb * mb * pc.batch) return;
    // neighbouring invocations (the lanes of one SIMD vector) share the rows: same A texels
    uint bj = id % nb, rest = id / nb;
    uint bi = rest % mb, bz = rest / mb;
    float acc[R][C];
    [[unroll]] for (uint i = 0; i < R; i++)
        [[unroll]] for (uint j = 0; j < C; j++) acc[i][j] = 0.0;
    int abase = int(pc.off[0] + bz * pc.stride_a + bi * (pc.kp / 4u) * R);
    int bbase = int(pc.off[1] + bz * pc.stride_b + bj * pc.kp * (C / 4u));
    for (uint ko = 0u; ko < pc.kp / KSTEP; ko++) {
        vec4 a[R][KSTEP / 4];
        vec4 b[KSTEP][C / 4];
        [[unroll]] for (uint i = 0; i < R; i++)
            [[unroll]] for (uint t = 0; t < KSTEP / 4; t++)
                a[i][t] = texelFetch(pa, abase + int(((KSTEP / 4u) * ko + t) * R + i));
        [[unroll]] for (uint kk = 0; kk < KSTEP; kk++)
            [[unroll]] for (uint q = 0; q < C / 4; q++) b[kk][q] = texelFetch(pb, bbase + int((ko * KSTEP + kk) * (C / 4u) + q));
        [[unroll]] for (uint i = 0; i < R; i++) {
            [[unroll]] for (uint q = 0; q < C / 4; q++) {
                [[unroll]] for (uint kk = 0; kk < KSTEP; kk++) {
                    float av = a[i][kk / 4][kk % 4];
                    acc[i][4 * q + 0] = fma(av, b[kk][q].x, acc[i][4 * q + 0]);
                    acc[i][4 * q + 1] = fma(av, b[kk][q].y, acc[i][4 * q + 1]);
                    acc[i][4 * q + 2] = fma(av, b[kk][q].z, acc[i][4 * q + 2]);
                    acc[i][4 * q + 3] = fma(av, b[kk][q].w, acc[i][4 * q + 3]);
                }
            }
        }
    }
    bool has_bias = kiln_has(pc.off[3]);
    uint cbase = pc.off[2] + bz * pc.stride_c;
    [[unroll]] for (uint i = 0; i < R; i++) {
        uint m = bi * R + i;
        if (m >= pc.m) break;
        [[unroll]] for (uint j = 0; j < C; j++) {
            uint n = bj * C + j;
            if (n >= pc.n) break;
            uint ci = cbase + m * pc.ldc + n;
            float v = pc.alpha * acc[i][j];
            if (pc.beta != 0.0) v += pc.beta * c[ci];
            if (has_bias) v += bias[pc.off[3] + n];
            c[ci] = v;
        }
    }
}
