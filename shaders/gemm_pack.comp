// Packing for the CPU-device GEMM (gemm_packed.comp): copies op(A) or op(B) of every batch
// into zero-padded panels of f32 texels, converting f16 and resolving the transpose, so the
// GEMM kernel reads nothing but whole RGBA32F texels:
//   A (M x K) -> [batch][Mp / R][Kp / 4][R] texels, texel = A[m][k .. k+3]
//   B (K x N) -> [batch][Np / C][Kp][C / 4] texels, texel = B[k][n .. n+3]
// One invocation writes one texel. The grid is (texels of a panel, panels, batches), so
// finding an element needs only divisions by the panel width, a constant: a CPU driver
// divides vectors of integers one lane at a time.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(constant_id = 0) const uint WG = 64;
layout(constant_id = 1) const uint PANEL = 16;   // R for A, C for B
layout(constant_id = 2) const bool IS_B = false;
layout(constant_id = 3) const bool TRANS = false;
layout(constant_id = 4) const bool SRC_F16 = false;
// The host sets VEC4 when a texel is 4 whole, aligned, contiguous source floats (op(X) not
// transposed, f32, leading dimension, batch stride and offset multiples of 4, K (for A) or
// N (for B) a multiple of 4): then one vector load replaces four.
layout(constant_id = 5) const bool VEC4 = false;
layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer Src { uint src[]; };
layout(std430, binding = 0) readonly buffer Src4 { vec4 src4[]; };
layout(std430, binding = 1) writeonly buffer Dst { vec4 dst[]; };
layout(push_constant) uniform Push { GEMM_PACK_PUSH } pc;

float element(uint b, uint row, uint k) {  // op(X)[row][k], 0 in the padding
    if (row >= pc.rows || k >= pc.k) return 0.0;
    // op(A)[m][k] is A[k][m] when transposed; op(B)[k][n] is B[n][k] when transposed
    bool k_major = IS_B ? !TRANS : TRANS;
    uint idx = pc.off[0] + b * pc.stride + (k_major ? k * pc.ld + row : row * pc.ld + k);
    return SRC_F16 ? unpackHalf2x16(src[idx >> 1])[idx & 1u] : uintBitsToFloat(src[idx]);
}

void main() {
    uint x = gl_GlobalInvocationID.x, panel = gl_WorkGroupID.y, b = gl_WorkGroupID.z;
    uint per_panel = pc.kp * (PANEL / 4u);  // texels in one panel, A and B alike
    if (x >= per_panel) return;
    vec4 v;
    if (VEC4) {  // the texel's floats are contiguous along k (A) or n (B)
        uint row, k;
        if (IS_B) {
            k = x / (PANEL / 4u);
            row = panel * PANEL + 4u * (x % (PANEL / 4u));
        } else {
            k = (x / PANEL) * 4u;
            row = panel * PANEL + x % PANEL;
        }
        bool inside = IS_B ? (k < pc.k && row < pc.rows) : (row < pc.rows && k < pc.k);
        uint idx = pc.off[0] + b * pc.stride + (IS_B ? k * pc.ld + row : row * pc.ld + k);
        v = inside ? src4[idx >> 2] : vec4(0.0);
    } else if (IS_B) {
        uint q = x % (PANEL / 4u), k = x / (PANEL / 4u);
        uint n = panel * PANEL + 4u * q;
        v = vec4(element(b, n, k), element(b, n + 1u, k), element(b, n + 2u, k), element(b, n + 3u, k));
    } else {
        uint r = x % PANEL, k = (x / PANEL) * 4u;
        uint m = panel * PANEL + r;
        v = vec4(element(b, m, k), element(b, m, k + 1u), element(b, m, k + 2u), element(b, m, k + 3u));
    }
    dst[pc.off[1] + (b * pc.panels + panel) * per_panel + x] = v;
}
