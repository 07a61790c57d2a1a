// fill: n elements of a dtype set to one value (kiln_fill_args).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "flat.glsl"

layout(std430, binding = 0) buffer Dst { uint dst[]; };
layout(push_constant) uniform Push { FILL_PUSH } pc;

void main() {
    uint t = kiln_flat_id();
    if (pc.f16 == 0u) {  // f32 or i32: the host passes the 32-bit pattern
        if (t < pc.n) dst[pc.off[0] + t] = pc.bits;
        return;
    }
    // f16: invocation t writes word w of the span, halves that fall outside stay untouched
    uint first = pc.off[0] >> 1;
    uint w = first + t;
    if (w > ((pc.off[0] + pc.n - 1u) >> 1)) return;
    bool lo = 2u * w >= pc.off[0] && 2u * w < pc.off[0] + pc.n;
    bool hi = 2u * w + 1u >= pc.off[0] && 2u * w + 1u < pc.off[0] + pc.n;
    KILN_STORE_HALVES(dst, w, pc.bits, pc.bits, lo, hi)
}
