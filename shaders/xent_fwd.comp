// Cross-entropy forward, the rows pass (kiln_xent_args), one workgroup per row:
//   lse = max z + log sum exp(z - max z)
//   loss_r = (1 - s)(lse - z[t]) + s (lse - mean_v z[v])
// row_loss[2r] = loss_r and row_loss[2r + 1] = 1 for a valid row; 0, 0 for a row whose
// target is ignore_index or out of range (which also sets err_flag[0] = 1). lse[r] is
// saved for the backward (0 on skipped rows). xent_sum.comp then forms the mean. The logits
// are data_t (f32, or f16 in the _f16 build); lse and the row losses are f32.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "reduce.glsl"

layout(std430, binding = 0) readonly buffer Logits { data_t z[]; };
layout(std430, binding = 1) readonly buffer Targets { int targets[]; };
layout(std430, binding = 2) writeonly buffer Lse { float lse_out[]; };
layout(std430, binding = 3) buffer Err { int err_flag[]; };
layout(std430, binding = 4) writeonly buffer RowLoss { float row_loss[]; };
layout(push_constant) uniform Push { XENT_FWD_PUSH } pc;

void main() {
    uint r = kiln_group_id();
    if (r >= pc.rows) return;
    uint l = gl_LocalInvocationID.x, V = pc.vocab;
    int t = targets[pc.off[1] + r];
    bool valid = t >= 0 && uint(t) < V;
    if (t == pc.ignore_index || !valid) {  // uniform across the workgroup
        if (l == 0u) {
            lse_out[pc.off[2] + r] = 0.0;
            row_loss[pc.off[4] + 2u * r] = 0.0;
            row_loss[pc.off[4] + 2u * r + 1u] = 0.0;
            if (t != pc.ignore_index && kiln_has(pc.off[3])) err_flag[pc.off[3]] = 1;
        }
        return;
    }
    uint zo = pc.off[0] + r * V;
    float zmax = -1.0 / 0.0;
    for (uint v = l; v < V; v += WG) zmax = max(zmax, LD(z[zo + v]));
    zmax = kiln_wg_max(zmax);
    float se = 0.0, sz = 0.0;
    for (uint v = l; v < V; v += WG) {
        float zv = LD(z[zo + v]);
        se += exp(zv - zmax);
        sz += zv;
    }
    se = kiln_wg_sum(se);
    sz = kiln_wg_sum(sz);
    if (l == 0u) {
        float lse = zmax + log(se);
        float s = pc.smoothing;
        lse_out[pc.off[2] + r] = lse;
        row_loss[pc.off[4] + 2u * r] = (1.0 - s) * (lse - LD(z[zo + uint(t)])) + s * (lse - sz / float(V));
        row_loss[pc.off[4] + 2u * r + 1u] = 1.0;
    }
}
