// GEMM for CPU devices whose subgroup is one 8-lane SIMD vector (lavapipe on AVX2 and
// AVX-512 hosts), on operands packed by gemm_pack_texel.comp (or gemm_pack.comp for f16
// and unaligned sources) with k along each texel:
//   A (M x K)  -> [batch][Mp / R][Kp / 4][R]  texels, texel = op(A)[m][k .. k+3]
//   B (K x N)  -> [batch][Np / CB][Kp / 4][CB] texels, texel = op(B)[k .. k+3][n]
// One workgroup (= one subgroup) computes an R x CB block of C; lane l owns the CL columns
// l * CL .. l * CL + CL - 1 of the block, so it needs B values no other lane needs (one
// texel fetch per column brings four k) and A values every lane needs: lane l fetches the
// texel of row l (+ 8, + 16, ...) and subgroupShuffle broadcasts each of its 32 values to
// the whole vector (one permute, where a texel fetch costs ~50 instructions).
//
// What bounds this kernel on lavapipe (Mesa 22.3; docs/benchmarks.md, "GEMM, Vulkan"):
//  - GLSL fma() is lowered to a multiply and an add (NIR lower_ffma32), so the ceiling is
//    two vector instructions per multiply-add, and nothing else may use those ports;
//  - a texel fetch is a call of ~50 instructions that transposes 8 texels;
//  - every accumulator written inside a loop is blended with the loop mask once per
//    iteration (vblendvps), so an iteration covers KS * 4 values of k;
//  - the unrolled loop body must stay within the 32 KiB instruction cache: R x CL x KS
//    is bounded (32 x 8 x 3 here; 32 x 8 x 4 ran 20% slower);
//  - every buffer load or store is a loop over the 8 lanes, and lavapipe runs both sides
//    of every branch (masked), so the epilogue must not even contain a load or store it
//    does not need: beta and bias are specialization constants, and whole rows of a
//    lane's CL columns are stored as vec4s where C allows (VEC4_C). Written the obvious
//    way, the epilogue took 10% of a 1024^3 product (and 40% at k = 96).
// Per iteration: KS * (R / 8 + CL) fetches, KS * 4 * R shuffles and KS * 4 * R * CL
// multiply-adds per lane; the R x CL accumulators are mostly stack slots, read and
// written once per iteration.
// R, CL and KS are compile-time constants: the loops must unroll before the driver sees
// them (a dynamically indexed array would become per-lane scratch memory).
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_shader_subgroup_shuffle : require
#include "common.glsl"

// The block shapes are engine/abi/kernel_abi.h's, which vk_gemm.c sizes panels and grids
// by: the plain build's, or the shorter one of the gemm_shuffle16 build (-DKILN_SHUFFLE16).
#ifdef KILN_SHUFFLE16
const uint R = KILN_ABI_VK_SHUFFLE16_ROWS;     // rows of the block (a multiple of SG)
const uint KS = KILN_ABI_VK_SHUFFLE16_KSTEPS;  // k steps (of 4) per loop iteration
#else
const uint R = KILN_ABI_VK_SHUFFLE_ROWS;
const uint KS = KILN_ABI_VK_SHUFFLE_KSTEPS;
#endif
const uint SG = KILN_ABI_VK_SHUFFLE_LANES;     // lanes of the subgroup = invocations of the workgroup
const uint CL = KILN_ABI_VK_SHUFFLE_LANE_COLS; // columns per lane
const uint CB = SG * CL;                       // columns of the block
const uint RA = R / SG;                        // A texels each lane fetches per k step

layout(local_size_x = KILN_ABI_VK_SHUFFLE_LANES) in;
layout(constant_id = 0) const bool BETA = false;    // C = alpha A B + beta C (beta != 0)
layout(constant_id = 1) const bool BIAS = false;    // + bias[n]
layout(constant_id = 2) const bool VEC4_C = false;  // the host checked: N % CB == 0, C, ldc
                                                    // and batch stride in whole vec4s

layout(binding = 0) uniform samplerBuffer pa;
layout(binding = 1) uniform samplerBuffer pb;
layout(std430, binding = 2) buffer Cbuf { float c[]; };
layout(std430, binding = 2) buffer Cbuf4 { vec4 c4[]; };
layout(std430, binding = 3) readonly buffer Bias { float bias[]; };
layout(push_constant) uniform Push { GEMM_PACKED_PUSH } pc;

// acc += the NS k steps (of 4) whose texels are a[s][*] and b[s][*]. Each accumulator
// takes its NS * 4 products in a row, so it is loaded and stored once per call.
#define ACCUMULATE(NS, a, b)                                                      \
    [[unroll]] for (uint i = 0; i < R; i++) {                                     \
        [[unroll]] for (uint s = 0; s < NS; s++) {                                \
            vec4 av = subgroupShuffle(a[s][i / SG], i % SG); /* A[i][k .. k+3] */ \
            [[unroll]] for (uint q = 0; q < CL; q++) {                            \
                acc[i][q] += av.x * b[s][q].x;                                    \
                acc[i][q] += av.y * b[s][q].y;                                    \
                acc[i][q] += av.z * b[s][q].z;                                    \
                acc[i][q] += av.w * b[s][q].w;                                    \
            }                                                                     \
        }                                                                         \
    }

void main() {
    float acc[R][CL];
    uint id = kiln_group_id();
    uint nb = pc.np / CB, mb = pc.mp / R;
    if (id >= nb * mb * pc.batch) return;
    uint lane = gl_SubgroupInvocationID;
    // consecutive workgroups share the rows (the same A panel, warm in cache)
    uint bj = id % nb, rest = id / nb;
    uint bi = rest % mb, bz = rest / mb;
    [[unroll]] for (uint i = 0; i < R; i++)
        [[unroll]] for (uint q = 0; q < CL; q++) acc[i][q] = 0.0;

    uint steps = pc.kp / 4u;
    int abase = int(pc.off[0] + bz * pc.stride_a + bi * steps * R + lane);
    int bbase = int(pc.off[1] + bz * pc.stride_b + bj * steps * CB + lane * CL);
    uint ks = 0u;
    for (; ks + KS <= steps; ks += KS) {
        vec4 a[KS][RA], b[KS][CL];
        [[unroll]] for (uint s = 0; s < KS; s++) {
            [[unroll]] for (uint r = 0; r < RA; r++) a[s][r] = texelFetch(pa, abase + int((ks + s) * R + r * SG));
            [[unroll]] for (uint q = 0; q < CL; q++) b[s][q] = texelFetch(pb, bbase + int((ks + s) * CB + q));
        }
        ACCUMULATE(KS, a, b)
    }
    for (; ks < steps; ks++) {  // the last steps % KS steps
        vec4 a[1][RA], b[1][CL];
        [[unroll]] for (uint r = 0; r < RA; r++) a[0][r] = texelFetch(pa, abase + int(ks * R + r * SG));
        [[unroll]] for (uint q = 0; q < CL; q++) b[0][q] = texelFetch(pb, bbase + int(ks * CB + q));
        ACCUMULATE(1, a, b)
    }

    uint cbase = pc.off[2] + bz * pc.stride_c;
    uint n0 = bj * CB + lane * CL;  // this lane's first column
    uint rows = min(R, pc.m - bi * R);
    float bv[CL];
    [[unroll]] for (uint q = 0; q < CL; q++) {
        bv[q] = 0.0;
        if (BIAS && n0 + q < pc.n) bv[q] = bias[pc.off[3] + n0 + q];
    }
    if (VEC4_C) {
        [[unroll]] for (uint i = 0; i < R; i++) {
            if (i >= rows) break;
            uint c4i = (cbase + (bi * R + i) * pc.ldc + n0) / 4u;
            [[unroll]] for (uint h = 0; h < CL / 4; h++) {
                vec4 v = pc.alpha * vec4(acc[i][4 * h], acc[i][4 * h + 1], acc[i][4 * h + 2], acc[i][4 * h + 3]);
                if (BETA) v += pc.beta * c4[c4i + h];
                if (BIAS) v += vec4(bv[4 * h], bv[4 * h + 1], bv[4 * h + 2], bv[4 * h + 3]);
                c4[c4i + h] = v;
            }
        }
    } else {
        [[unroll]] for (uint i = 0; i < R; i++) {
            if (i >= rows) break;
            [[unroll]] for (uint q = 0; q < CL; q++) {
                uint n = n0 + q;
                if (n < pc.n) {
                    uint ci = cbase + (bi * R + i) * pc.ldc + n;
                    float v = pc.alpha * acc[i][q];
                    if (BETA) v += pc.beta * c[ci];
                    if (BIAS) v += bv[q];
                    c[ci] = v;
                }
            }
        }
    }
}
