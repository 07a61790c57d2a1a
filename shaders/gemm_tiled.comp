// gemm_tiled: GEMM for GPUs (kiln_gemm_args), C[b] = alpha op(A[b]) op(B[b]) + beta C[b]
// (+ bias[n]), f32 or f16 (packed words) inputs, f32 accumulation and output, any M, N, K.
//
// A workgroup of WX x WY invocations computes a BM x BN tile of C (BM = WY * TM,
// BN = WX * TN), each invocation a TM x TN register block. Per step of BK along K the
// workgroup stages op(A) and op(B) tiles in shared memory (k-major, so the inner loop reads
// contiguous rows), loading along the direction that is contiguous in memory for each
// transpose. Out-of-range elements load as 0, so the tile loop needs no edge cases.
// Transposes and dtypes are specialization constants: each combination is its own
// pipeline without branches in the inner loop.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(constant_id = 0) const uint WX = 16;
layout(constant_id = 1) const uint WY = 16;
layout(constant_id = 2) const uint TM = 4;
layout(constant_id = 3) const uint TN = 4;
layout(constant_id = 4) const uint BK = 16;
layout(constant_id = 5) const bool TRANS_A = false;
layout(constant_id = 6) const bool TRANS_B = false;
layout(constant_id = 7) const bool A_F16 = false;
layout(constant_id = 8) const bool B_F16 = false;
layout(local_size_x_id = 0, local_size_y_id = 1) in;

const uint BM = WY * TM;
const uint BN = WX * TN;
const uint NT = WX * WY;

layout(std430, binding = 0) readonly buffer A { uint a[]; };
layout(std430, binding = 1) readonly buffer B { uint b[]; };
layout(std430, binding = 2) buffer C { float c[]; };
layout(std430, binding = 3) readonly buffer Bias { float bias[]; };
layout(push_constant) uniform Push { GEMM_TILED_PUSH } pc;

shared float As[BK * BM];
shared float Bs[BK * BN];

float load_a(uint base, uint idx) {
    return A_F16 ? unpackHalf2x16(a[(base + idx) >> 1])[(base + idx) & 1u] : uintBitsToFloat(a[base + idx]);
}
float load_b(uint base, uint idx) {
    return B_F16 ? unpackHalf2x16(b[(base + idx) >> 1])[(base + idx) & 1u] : uintBitsToFloat(b[base + idx]);
}

void main() {
    uint tid = gl_LocalInvocationID.y * WX + gl_LocalInvocationID.x;
    uint bz = gl_WorkGroupID.z;
    uint m0 = gl_WorkGroupID.y * BM, n0 = gl_WorkGroupID.x * BN;
    uint abase = pc.off[0] + bz * pc.stride_a, bbase = pc.off[1] + bz * pc.stride_b;
    float acc[TM][TN];
    for (uint i = 0u; i < TM; i++)
        for (uint j = 0u; j < TN; j++) acc[i][j] = 0.0;

    for (uint k0 = 0u; k0 < pc.k; k0 += BK) {
        // stage op(A)[m0.., k0..] as As[kk * BM + mm]
        for (uint idx = tid; idx < BK * BM; idx += NT) {
            uint kk, mm;
            if (TRANS_A) { mm = idx % BM; kk = idx / BM; }  // A stored K x M: m contiguous
            else         { kk = idx % BK; mm = idx / BK; }  // A stored M x K: k contiguous
            uint gm = m0 + mm, gk = k0 + kk;
            float v = 0.0;
            if (gm < pc.m && gk < pc.k) v = load_a(abase, TRANS_A ? gk * pc.lda + gm : gm * pc.lda + gk);
            As[kk * BM + mm] = v;
        }
        // stage op(B)[k0.., n0..] as Bs[kk * BN + nn]
        for (uint idx = tid; idx < BK * BN; idx += NT) {
            uint kk, nn;
            if (TRANS_B) { kk = idx % BK; nn = idx / BK; }  // B stored N x K: k contiguous
            else         { nn = idx % BN; kk = idx / BN; }  // B stored K x N: n contiguous
            uint gk = k0 + kk, gn = n0 + nn;
            float v = 0.0;
            if (gk < pc.k && gn < pc.n) v = load_b(bbase, TRANS_B ? gn * pc.ldb + gk : gk * pc.ldb + gn);
            Bs[kk * BN + nn] = v;
        }
        barrier();
        for (uint kk = 0u; kk < BK; kk++) {
            float av[TM], bv[TN];
            for (uint i = 0u; i < TM; i++) av[i] = As[kk * BM + gl_LocalInvocationID.y + i * WY];
            for (uint j = 0u; j < TN; j++) bv[j] = Bs[kk * BN + gl_LocalInvocationID.x + j * WX];
            for (uint i = 0u; i < TM; i++)
                for (uint j = 0u; j < TN; j++) acc[i][j] = fma(av[i], bv[j], acc[i][j]);
        }
        barrier();
    }

    bool has_bias = kiln_has(pc.off[3]);
    uint cbase = pc.off[2] + bz * pc.stride_c;
    for (uint i = 0u; i < TM; i++) {
        uint gm = m0 + gl_LocalInvocationID.y + i * WY;
        if (gm >= pc.m) continue;
        for (uint j = 0u; j < TN; j++) {
            uint gn = n0 + gl_LocalInvocationID.x + j * WX;
            if (gn >= pc.n) continue;
            uint ci = cbase + gm * pc.ldc + gn;
            float v = pc.alpha * acc[i][j];
            if (pc.beta != 0.0) v += pc.beta * c[ci];
            if (has_bias) v += bias[pc.off[3] + gn];
            c[ci] = v;
        }
    }
}
