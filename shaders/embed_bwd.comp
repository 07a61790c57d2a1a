// embed_bwd: dtable[ids[r], :] += dout[r, :] (kiln_embed_args). Positions may repeat an
// id, so each invocation owns one column and walks every position in order: no two
// invocations write the same element, and the sum order matches the CPU reference.
// Ids outside [0, vocab) are skipped (the forward already flagged them). The dtable binding
// holds rows v0 .. v0 + vn - 1 (vk_embedding.c splits larger tables); other ids are skipped.
//
// f32: each position adds into dtable directly.
// f16 (the _f16 build): a row of dtable that many positions hit (a common token) must be
// rounded once, after all of its additions, not once per position: rounding every step
// would lose the small contributions as the sum grows. The rows are summed in f32 in acc,
// at the slot of the id's first position (owner[id], from embed_owner.comp), starting from
// dtable's old value, in position order as on the CPU, then stored once. A dispatch covers
// columns c0 .. c0 + cols - 1 (the host splits wide tables so that acc fits one binding);
// the additions run in pieces of positions (phase KILN_ABI_VK_EMBED_BWD_ADD, dout binds only
// the piece's rows), then one dispatch rounds and stores (KILN_ABI_VK_EMBED_BWD_STORE).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "flat.glsl"

layout(std430, binding = 0) readonly buffer Ids { int ids[]; };
layout(std430, binding = 1) readonly buffer DOut { data_t dout[]; };
layout(std430, binding = 2) buffer DTable { data_t dtable[]; };

#ifndef KILN_F16
layout(push_constant) uniform Push { EMBED_BWD_PUSH } pc;

void main() {
    uint c = kiln_flat_id();
    if (c >= pc.dim) return;
    for (uint r = 0u; r < pc.rows; r++) {
        int id = ids[pc.off[0] + r];
        uint row = uint(id) - pc.v0; // outside the window (or the vocab): skipped
        if (id < 0 || row >= pc.vn) continue;
        dtable[pc.off[2] + row * pc.dim + c] += dout[pc.off[1] + r * pc.dim + c];
    }
}
#else
layout(std430, binding = 3) readonly buffer Owner { int owner[]; };
layout(std430, binding = 4) buffer Acc { float acc[]; };
layout(push_constant) uniform Push { EMBED_BWD_F16_PUSH } pc;

void main() {
    uint j = kiln_flat_id();
    if (j >= pc.cols) return;
    uint c = pc.c0 + j;
    if (pc.phase == KILN_ABI_VK_EMBED_BWD_ADD) {
        for (uint q = 0u; q < pc.rn; q++) {
            uint r = pc.r0 + q;
            int id = ids[pc.off[0] + r];
            uint row = uint(id) - pc.v0;
            if (id < 0 || row >= pc.vn) continue;
            uint first = uint(owner[pc.off[3] + uint(id)]);
            uint a = pc.off[4] + first * pc.cols + j;
            float g = LD(dout[pc.off[1] + q * pc.dim + c]);
            if (first == r)
                acc[a] = LD(dtable[pc.off[2] + row * pc.dim + c]) + g;
            else
                acc[a] += g;
        }
        return;
    }
    // KILN_ABI_VK_EMBED_BWD_STORE
    for (uint r = 0u; r < pc.rows; r++) {
        int id = ids[pc.off[0] + r];
        uint row = uint(id) - pc.v0;
        if (id < 0 || row >= pc.vn || uint(owner[pc.off[3] + uint(id)]) != r) continue;
        dtable[pc.off[2] + row * pc.dim + c] = ST(acc[pc.off[4] + r * pc.cols + j]);
    }
}
#endif
