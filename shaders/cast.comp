// cast: dst = (dst dtype) src over n elements, f32 <-> f16 with round-to-nearest-even, or
// a plain copy (kiln_cast_args). f16 outputs are produced a 32-bit word per invocation.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "flat.glsl"

layout(std430, binding = 0) readonly buffer Src { uint src[]; };
layout(std430, binding = 1) buffer Dst { uint dst[]; };
layout(push_constant) uniform Push { CAST_PUSH } pc;

void main() {
    uint t = kiln_flat_id();
    uint so = pc.off[0], d0 = pc.off[1], n = pc.n;
    if (pc.mode == KILN_ABI_VK_CAST_COPY32) {
        if (t < n) dst[d0 + t] = src[so + t];
    } else if (pc.mode == KILN_ABI_VK_CAST_F16_TO_F32) {
        if (t < n) dst[d0 + t] = floatBitsToUint(kiln_f16_to_f32(KILN_HALF(src, so + t)));
    } else {  // f16 outputs: one destination word per invocation
        uint w = (d0 >> 1) + t;
        if (w > ((d0 + n - 1u) >> 1)) return;
        uint e_lo = 2u * w - d0, e_hi = 2u * w + 1u - d0;  // element indices (wrap below 0)
        bool lo = 2u * w >= d0 && e_lo < n;
        bool hi = e_hi < n;
        uint hl = 0u, hh = 0u;
        if (pc.mode == KILN_ABI_VK_CAST_COPY16) {
            if (lo) hl = KILN_HALF(src, so + e_lo);
            if (hi) hh = KILN_HALF(src, so + e_hi);
        } else {  // KILN_ABI_VK_CAST_F32_TO_F16
            if (lo) hl = kiln_f32_to_f16(uintBitsToFloat(src[so + e_lo]));
            if (hi) hh = kiln_f32_to_f16(uintBitsToFloat(src[so + e_hi]));
        }
        KILN_STORE_HALVES(dst, w, hl, hh, lo, hi)
    }
}
