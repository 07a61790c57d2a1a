// embed_fwd: out[r, :] = table[ids[r], :] (kiln_embed_args). A row whose id is outside
// [0, vocab) is left untouched and sets err_flag[0] = 1, which the engine reports on its
// next read. table and out are data_t (f32, or f16 in the _f16 build): a plain copy.
// The table binding holds rows v0 .. v0 + vn - 1 (vk_embedding.c splits larger tables).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "flat.glsl"

layout(std430, binding = 0) readonly buffer Table { data_t table_[]; };
layout(std430, binding = 1) readonly buffer Ids { int ids[]; };
layout(std430, binding = 2) writeonly buffer Out { data_t outv[]; };
layout(std430, binding = 3) buffer Err { int err_flag[]; };
layout(push_constant) uniform Push { EMBED_FWD_PUSH } pc;

void main() {
    uint i = kiln_flat_id();
    if (i >= pc.rows * pc.dim) return;
    uint r = i / pc.dim, c = i - r * pc.dim;
    int id = ids[pc.off[1] + r];
    if (id < 0 || uint(id) >= pc.vocab) {
        if (c == 0u && kiln_has(pc.off[3])) err_flag[pc.off[3]] = 1;
        return;
    }
    uint row = uint(id) - pc.v0; // wraps around for an id below the window
    if (row >= pc.vn) return;
    outv[pc.off[2] + i] = table_[pc.off[0] + row * pc.dim + c];
}
