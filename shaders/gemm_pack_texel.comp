// Packing for the CPU-device GEMMs, fast path: an f32 (f16) source read as RGBA32F (RGBA16F)
// texels, which texelFetch returns as f32 either way (the
// host uses it when the source offset, leading dimension and batch stride are whole
// texels), written as the panels of gemm_pack.comp with k along each texel:
//   X (rows x K) -> [batch][padded rows / PANEL][Kp / 4][PANEL] texels, texel = X[row][k .. k+3]
// X is op(A), or op(B)^T for gemm_shuffle.comp; the host passes what X is stored as:
//  - TRANSPOSED false: X[row][k] at row * ld + k. Workgroup y is a panel; lanes take
//    consecutive rows and each invocation copies STEPS (4) texels along k (one cache line;
//    the host sizes the grid by it).
//  - TRANSPOSED true:  X[row][k] at k * ld + row (the common B of C = A B, or A^T).
//    Workgroup y is a step of 4 k; each invocation fetches a 4 x 4 block (4 texels along
//    the rows, at k .. k+3) and writes its transpose, so a workgroup reads 4 stored rows
//    front to back.
// On lavapipe a texel fetch brings 4 floats per lane for about the price of one scalar
// buffer load, which gemm_pack.comp does per element. The access orders were measured on
// lavapipe right after a 1024^3 GEMM (the source no longer cached): these were 1.5-3x
// faster than one texel per invocation, or than rows taken across the k-major source.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(constant_id = 0) const uint WG = 64;
layout(constant_id = 1) const uint PANEL = 32;  // a multiple of 4
layout(constant_id = 2) const bool TRANSPOSED = false;
layout(local_size_x_id = 0) in;
const uint STEPS = KILN_ABI_VK_PACK_TEXEL_STEPS;

layout(binding = 0) uniform samplerBuffer src;  // offset off[0] in texels
layout(std430, binding = 1) writeonly buffer Dst { vec4 dst[]; };
layout(push_constant) uniform Push { GEMM_PACK_PUSH } pc;  // ld, stride in floats (multiples of 4)

// The output texel of (row, k step) in batch b.
uint out_texel(uint b, uint row, uint ks) {
    uint steps = pc.kp / 4u;
    return pc.off[1] + ((b * pc.panels + row / PANEL) * steps + ks) * PANEL + row % PANEL;
}

void main() {
    uint x = gl_GlobalInvocationID.x, y = gl_WorkGroupID.y, b = gl_WorkGroupID.z;
    uint steps = pc.kp / 4u;
    uint in0 = pc.off[0] + b * (pc.stride / 4u);
    if (!TRANSPOSED) {
        // lanes take consecutive rows of a panel (the writes are consecutive texels), each
        // invocation STEPS k steps (a whole cache line of its row)
        uint panel = y, r = x % PANEL, row = panel * PANEL + r;
        for (uint j = 0u; j < STEPS; j++) {
            uint ks = STEPS * (x / PANEL) + j, k = 4u * ks;
            if (ks >= steps) break;
            vec4 v = vec4(0.0);
            if (row < pc.rows && k < pc.k) {
                v = texelFetch(src, int(in0 + row * (pc.ld / 4u) + ks));
                // the texel's tail past k belongs to the next row (or past the end)
                if (k + 3u >= pc.k) v = mix(v, vec4(0.0), greaterThanEqual(uvec4(k) + uvec4(0u, 1u, 2u, 3u), uvec4(pc.k)));
            }
            dst[out_texel(b, row, ks)] = v;
        }
    } else {
        uint ks = y, k = 4u * ks, row0 = 4u * x;
        if (row0 >= pc.panels * PANEL) return;
        // t[c] = X[row0 .. row0+3][k + c]
        vec4 t[4];
        for (uint c = 0u; c < 4u; c++) {
            t[c] = vec4(0.0);
            if (row0 < pc.rows && k + c < pc.k) t[c] = texelFetch(src, int(in0 + (k + c) * (pc.ld / 4u) + row0 / 4u));
        }
        uint o = out_texel(b, row0, ks);
        for (uint j = 0u; j < 4u; j++) {
            // past the last row the texel holds the next k's values (or nothing): zeros
            vec4 v = row0 + j < pc.rows ? vec4(t[0][j], t[1][j], t[2][j], t[3][j]) : vec4(0.0);
            dst[o + j] = v;
        }
    }
}
