// Packing for the cooperative-matrix GEMM (gemm_coopmat.comp): op(X) of every batch, an
// f16 matrix of rows x cols stored with leading dimension ld (transposed when trans),
// copied into a zero-padded row-major rows_p x cols_p f16 matrix. One invocation writes one
// 32-bit word (two neighbouring halves of a row; cols_p is even), so no write is shared.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(constant_id = 0) const uint WG = 64;
layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer Src { uint src[]; };
layout(std430, binding = 1) writeonly buffer Dst { uint dst[]; };
layout(push_constant) uniform Push { GEMM_COOPMAT_PACK_PUSH } pc;

uint half_at(uint b, uint r, uint col) {  // op(X)[r][col] as f16 bits, 0 in the padding
    if (r >= pc.rows || col >= pc.cols) return 0u;
    uint idx = pc.off[0] + b * pc.stride + (pc.trans != 0u ? col * pc.ld + r : r * pc.ld + col);
    return KILN_HALF(src, idx);
}

void main() {
    uint w = gl_GlobalInvocationID.x, r = gl_WorkGroupID.y, b = gl_WorkGroupID.z;
    if (w >= pc.cols_p / 2u) return;
    uint col = 2u * w;
    uint word = half_at(b, r, col) | (half_at(b, r, col + 1u) << 16);
    dst[(pc.off[1] >> 1) + (b * pc.rows_p + r) * (pc.cols_p / 2u) + w] = word;
}
