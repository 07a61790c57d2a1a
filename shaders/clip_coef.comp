// clip_coef (kiln_clip_args): norm = sqrt(sumsq[0]) * unscale;
// coef = unscale * min(1, clip / (norm + 1e-6)) when clip > 0, else unscale. One invocation.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x = 1) in;

layout(std430, binding = 0) readonly buffer SumSq { float sumsq[]; };
layout(std430, binding = 1) writeonly buffer Coef { float coef_out[]; };
layout(std430, binding = 2) writeonly buffer Norm { float norm_out[]; };
layout(push_constant) uniform Push { CLIP_COEF_PUSH } pc;

void main() {
    float norm = sqrt(sumsq[pc.off[0]]) * pc.unscale;
    float coef = pc.unscale;
    if (pc.clip > 0.0) {
        float ratio = pc.clip / (norm + 1e-6);
        if (ratio < 1.0) coef *= ratio;  // a NaN norm keeps coef (the skip flag handles it)
    }
    if (kiln_has(pc.off[1])) coef_out[pc.off[1]] = coef;
    if (kiln_has(pc.off[2])) norm_out[pc.off[2]] = norm;
}
