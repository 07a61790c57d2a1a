// binary: out[i] = a[i] op b[i % nb], op KILN_ABI_BIN_ADD / SUB / MUL / DIV
// (kiln_binary_args); nb == n is no broadcast, nb == 1 a scalar b; f32 or f16.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "flat.glsl"

layout(std430, binding = 0) readonly buffer A { data_t a[]; };
layout(std430, binding = 1) readonly buffer B { data_t b[]; };
layout(std430, binding = 2) writeonly buffer Out { data_t outv[]; };
layout(push_constant) uniform Push { BINARY_PUSH } pc;

void main() {
    uint i = kiln_flat_id();
    if (i >= pc.n) return;
    float av = LD(a[pc.off[0] + i]);
    // the two common cases need no integer division per element
    uint j = pc.nb == pc.n ? i : pc.nb == 1u ? 0u : i % pc.nb;
    float bv = LD(b[pc.off[1] + j]);
    float r = pc.op == KILN_ABI_BIN_ADD   ? av + bv
              : pc.op == KILN_ABI_BIN_SUB ? av - bv
              : pc.op == KILN_ABI_BIN_MUL ? av * bv
                                          : av / bv;
    outv[pc.off[2] + i] = ST(r);
}
