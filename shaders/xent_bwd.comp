// Cross-entropy backward (kiln_xent_args):
//   dlogits[r, v] += dloss[0] / max(count, 1) * (exp(z - lse[r]) - s / V - (1 - s)[v == t])
// nothing for rows whose target is ignore_index or out of range. logits and dlogits are
// data_t (f32, or f16 in the _f16 build); lse, count and dloss are f32.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "flat.glsl"

layout(std430, binding = 0) readonly buffer Logits { data_t z[]; };
layout(std430, binding = 1) readonly buffer Targets { int targets[]; };
layout(std430, binding = 2) readonly buffer Lse { float lse[]; };
layout(std430, binding = 3) readonly buffer Count { float count_in[]; };
layout(std430, binding = 4) readonly buffer DLoss { float dloss[]; };
layout(std430, binding = 5) buffer DLogits { data_t dz[]; };
layout(push_constant) uniform Push { XENT_BWD_PUSH } pc;

void main() {
    uint i = kiln_flat_id();
    if (i >= pc.rows * pc.vocab) return;
    uint r = i / pc.vocab, v = i - r * pc.vocab;
    int t = targets[pc.off[1] + r];
    if (t == pc.ignore_index || t < 0 || uint(t) >= pc.vocab) return;
    float count = count_in[pc.off[3]];
    float coef = dloss[pc.off[4]] / (count > 1.0 ? count : 1.0);
    float uniform_ = pc.smoothing / float(pc.vocab);
    float g = exp(LD(z[pc.off[0] + i]) - lse[pc.off[2] + r]) - uniform_ - (v == uint(t) ? 1.0 - pc.smoothing : 0.0);
    uint o = pc.off[5] + i;
    dz[o] = ST(LD(dz[o]) + coef * g);
}
