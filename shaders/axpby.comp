// axpby: y = alpha * x + beta * y, alpha scaled by the device scalars num[0] / den[0]
// (kiln_axpby_args). beta == 0 overwrites y without reading it. x and y are data_t
// (f32, or f16 in the _f16 build); num and den are f32.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "flat.glsl"

layout(std430, binding = 0) readonly buffer X { data_t x[]; };
layout(std430, binding = 1) buffer Y { data_t y[]; };
layout(std430, binding = 2) readonly buffer Num { float num[]; };
layout(std430, binding = 3) readonly buffer Den { float den[]; };
layout(push_constant) uniform Push { AXPBY_PUSH } pc;

void main() {
    uint i = kiln_flat_id();
    if (i >= pc.n) return;
    float alpha = pc.alpha;
    if (kiln_has(pc.off[2])) alpha *= num[pc.off[2]];
    if (kiln_has(pc.off[3])) alpha /= den[pc.off[3]];
    float xv = kiln_has(pc.off[0]) ? LD(x[pc.off[0] + i]) : 1.0;
    uint yi = pc.off[1] + i;
    y[yi] = ST(pc.beta == 0.0 ? alpha * xv : alpha * xv + pc.beta * LD(y[yi]));
}
