// Packing for the CPU-device GEMM (gemm_packed.comp): copies op(A) or op(B) of every batch
// into zero-padded panels of f32 texels, converting f16 and resolving the transpose, so the
// GEMM kernel reads nothing but whole RGBA32F texels:
//   A (M x K) -> [batch][Mp / R][Kp / 4][R] texels, texel = A[m][k .. k+3]
//   B (K x N) -> [batch][Np / C][Kp][C / 4] texels, texel = B[k][n .. n+3]
// One invocation writes one float of the packed buffer (in the buffer's order).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(constant_id = 0) const uint WG = 64;
layout(constant_id = 1) const uint PANEL = 16;   // R for A, C for B
layout(constant_id = 2) const bool IS_B = false;
layout(constant_id = 3) const bool TRANS = false;
layout(constant_id = 4) const bool SRC_F16 = false;
layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer Src { uint src[]; };
layout(std430, binding = 1) writeonly buffer Dst { float dst[]; };
layout(push_constant) uniform Push { GEMM_PACK_PUSH } pc;

void main() {
    uint f = kiln_group_id() * WG + gl_LocalInvocationID.x;
    uint per_batch = pc.padded * pc.kp;  // floats per batch
    if (f >= per_batch * pc.batch) return;
    uint b = f / per_batch, e = f - b * per_batch;
    uint t = e >> 2, lane = e & 3u;
    uint row, k;  // row: m of op(A) or n of op(B)
    if (IS_B) {
        uint per_k = PANEL / 4u;
        uint q = t % per_k, tk = t / per_k;
        k = tk % pc.kp;
        row = (tk / pc.kp) * PANEL + q * 4u + lane;
    } else {
        uint r = t % PANEL, tq = t / PANEL;
        k = (tq % (pc.kp / 4u)) * 4u + lane;
        row = (tq / (pc.kp / 4u)) * PANEL + r;
    }
    float v = 0.0;
    if (row < pc.rows && k < pc.k) {
        // op(A)[m][k] is A[k][m] when transposed; op(B)[k][n] is B[n][k] when transposed
        bool k_major = IS_B ? !TRANS : TRANS;
        uint idx = pc.off[0] + b * pc.stride + (k_major ? k * pc.ld + row : row * pc.ld + k);
        v = SRC_F16 ? unpackHalf2x16(src[idx >> 1])[idx & 1u] : uintBitsToFloat(src[idx]);
    }
    dst[pc.off[1] + f] = v;
}
