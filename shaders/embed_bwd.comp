// embed_bwd: dtable[ids[r], :] += dout[r, :] (kiln_embed_args). Positions may repeat an
// id, so each invocation owns one column and walks every position in order: no two
// invocations write the same element, and the sum order matches the CPU reference.
// Ids outside [0, vocab) are skipped (the forward already flagged them).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(constant_id = 0) const uint WG = 64;
layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer Ids { int ids[]; };
layout(std430, binding = 1) readonly buffer DOut { float dout[]; };
layout(std430, binding = 2) buffer DTable { float dtable[]; };
layout(push_constant) uniform Push { EMBED_PUSH } pc;

void main() {
    uint c = kiln_group_id() * WG + gl_LocalInvocationID.x;
    if (c >= pc.dim) return;
    for (uint r = 0u; r < pc.rows; r++) {
        int id = ids[pc.off[0] + r];
        if (id < 0 || uint(id) >= pc.vocab) continue;
        dtable[pc.off[2] + uint(id) * pc.dim + c] += dout[pc.off[1] + r * pc.dim + c];
    }
}
