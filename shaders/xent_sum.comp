// Cross-entropy forward, the final pass: loss[0] = sum of row losses / count (0 when no
// row is valid), count[0] = number of valid rows. One workgroup.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "reduce.glsl"

layout(std430, binding = 0) readonly buffer RowLoss { float row_loss[]; };
layout(std430, binding = 1) writeonly buffer Loss { float loss[]; };
layout(std430, binding = 2) writeonly buffer Count { float count_out[]; };
layout(push_constant) uniform Push { XENT_SUM_PUSH } pc;

void main() {
    uint l = gl_LocalInvocationID.x;
    float total = 0.0, count = 0.0;
    for (uint r = l; r < pc.rows; r += WG) {
        total += row_loss[pc.off[0] + 2u * r];
        count += row_loss[pc.off[0] + 2u * r + 1u];
    }
    total = kiln_wg_sum(total);
    count = kiln_wg_sum(count);
    if (l == 0u) {
        loss[pc.off[1]] = count > 0.0 ? total / count : 0.0;
        count_out[pc.off[2]] = count;
    }
}
