// embed_owner: owner[id] = the first position r whose ids[r] is id (owner filled with a
// value above any position beforehand; ids outside [0, vocab) are skipped). The f16
// embedding backward (embed_bwd.comp) sums each id's rows in f32 under that position.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "flat.glsl"

layout(std430, binding = 0) readonly buffer Ids { int ids[]; };
layout(std430, binding = 1) buffer Owner { int owner[]; };
layout(push_constant) uniform Push { EMBED_OWNER_PUSH } pc;

void main() {
    uint r = kiln_flat_id();
    if (r >= pc.rows) return;
    int id = ids[pc.off[0] + r];
    if (id < 0 || uint(id) >= pc.vocab) return;
    atomicMin(owner[pc.off[1] + uint(id)], int(r));
}
