// Adam(W) update (kiln_adam_args), skipped entirely when skip[0] != 0:
//   g = grad * coef (+ wd * p when !decoupled); m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2
//   p -= lr * wd * p (decoupled); p -= lr * (m / bc1) / (sqrt(v / bc2) + eps)
//   half_copy = (f16) p when present.
// An invocation updates the two elements that share one 32-bit word of half_copy (or two
// consecutive elements without it), so f16 writes never race.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "flat.glsl"

layout(std430, binding = 0) buffer Param { float p[]; };
layout(std430, binding = 1) readonly buffer Grad { uint grad[]; };
layout(std430, binding = 2) buffer M { float m[]; };
layout(std430, binding = 3) buffer V { float v[]; };
layout(std430, binding = 4) buffer Half { uint half_copy[]; };
layout(std430, binding = 5) readonly buffer Coef { float coef_in[]; };
layout(std430, binding = 6) readonly buffer Skip { int skip[]; };
layout(push_constant) uniform Push { ADAM_PUSH } pc;

float update(uint e, float coef) {
    float g = pc.grad_f16 != 0u ? kiln_f16_to_f32(KILN_HALF(grad, pc.off[1] + e)) : uintBitsToFloat(grad[pc.off[1] + e]);
    float pv = p[pc.off[0] + e];
    g *= coef;
    if (pc.decoupled == 0u && pc.weight_decay != 0.0) g += pc.weight_decay * pv;
    float mv = pc.beta1 * m[pc.off[2] + e] + (1.0 - pc.beta1) * g;
    float vv = pc.beta2 * v[pc.off[3] + e] + (1.0 - pc.beta2) * g * g;
    if (pc.decoupled != 0u) pv -= pc.lr * pc.weight_decay * pv;
    pv -= pc.lr * (mv / pc.bc1) / (sqrt(vv / pc.bc2) + pc.eps);
    m[pc.off[2] + e] = mv;
    v[pc.off[3] + e] = vv;
    p[pc.off[0] + e] = pv;
    return pv;
}

void main() {
    if (kiln_has(pc.off[6]) && skip[pc.off[6]] != 0) return;
    uint t = kiln_flat_id();
    bool has_half = kiln_has(pc.off[4]);
    uint h0 = has_half ? pc.off[4] : 0u;  // the pairs follow half_copy's word boundaries
    uint w = (h0 >> 1) + t;
    uint e_lo = 2u * w - h0, e_hi = 2u * w + 1u - h0;
    bool lo = 2u * w >= h0 && e_lo < pc.n;
    bool hi = e_hi < pc.n;
    if (!lo && !hi) return;
    float coef = kiln_has(pc.off[5]) ? coef_in[pc.off[5]] : 1.0;
    float plo = lo ? update(e_lo, coef) : 0.0;
    float phi = hi ? update(e_hi, coef) : 0.0;
    if (has_half) {
        uint hl = kiln_f32_to_f16(plo), hh = kiln_f32_to_f16(phi);
        KILN_STORE_HALVES(half_copy, w, hl, hh, lo, hi)
    }
}
