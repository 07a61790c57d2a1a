// copy_block: dst[o, dst_start + i, k] (+)= src[o, src_start + i, k] for i < len
// (kiln_copy_block_args): concat and slice, forward and backward. data_t is f32 (also used
// for i32: a copy moves the bits) or f16 (the _f16 build).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "flat.glsl"

layout(std430, binding = 0) readonly buffer Src { data_t src[]; };
layout(std430, binding = 1) buffer Dst { data_t dst[]; };
layout(push_constant) uniform Push { COPY_BLOCK_PUSH } pc;

void main() {
    uint e = kiln_flat_id();
    if (e >= pc.outer * pc.len * pc.inner) return;
    uint k = e % pc.inner, row = e / pc.inner;
    uint i = row % pc.len, o = row / pc.len;
    uint si = pc.off[0] + (o * pc.src_axis + pc.src_start + i) * pc.inner + k;
    uint di = pc.off[1] + (o * pc.dst_axis + pc.dst_start + i) * pc.inner + k;
    if (pc.accumulate != 0u)
        dst[di] = ST(LD(dst[di]) + LD(src[si]));
    else
        dst[di] = src[si];
}
