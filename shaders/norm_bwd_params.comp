// norm_bwd_params: LayerNorm / RMSNorm backward, the parameter gradients (kiln_norm_args):
//   dweight[j] += sum_r dy * xhat,  dbias[j] += sum_r dy   (each optional)
// A workgroup owns WX columns; its WY rows of invocations take strided row subsets and
// meet in shared memory in a fixed order. x, dy, dweight and dbias are data_t (f32, or f16
// in the _f16 build); mean and rstd are f32.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(constant_id = 0) const uint WX = 32;
layout(constant_id = 1) const uint WY = 8;
layout(local_size_x_id = 0, local_size_y_id = 1) in;

layout(std430, binding = 0) readonly buffer X { data_t x[]; };
layout(std430, binding = 1) readonly buffer Mean { float mean_in[]; };
layout(std430, binding = 2) readonly buffer Rstd { float rstd_in[]; };
layout(std430, binding = 3) readonly buffer DY { data_t dy[]; };
layout(std430, binding = 4) buffer DW { data_t dw[]; };
layout(std430, binding = 5) buffer DB { data_t db[]; };
layout(push_constant) uniform Push { NORM_BWD_PARAMS_PUSH } pc;

shared float part_w[WY][WX];
shared float part_b[WY][WX];

void main() {
    uint lx = gl_LocalInvocationID.x, ly = gl_LocalInvocationID.y;
    uint j = gl_WorkGroupID.x * WX + lx;
    float aw = 0.0, ab = 0.0;
    if (j < pc.cols) {
        for (uint r = ly; r < pc.rows; r += WY) {
            float m = pc.rms != KILN_ABI_NORM_LAYER ? 0.0 : mean_in[pc.off[1] + r];
            float rs = rstd_in[pc.off[2] + r];
            float g = LD(dy[pc.off[3] + r * pc.cols + j]);
            aw += g * ((LD(x[pc.off[0] + r * pc.cols + j]) - m) * rs);
            ab += g;
        }
    }
    part_w[ly][lx] = aw;
    part_b[ly][lx] = ab;
    barrier();
    if (ly == 0u && j < pc.cols) {
        float tw = 0.0, tb = 0.0;
        for (uint k = 0u; k < WY; k++) {
            tw += part_w[k][lx];
            tb += part_b[k][lx];
        }
        if (kiln_has(pc.off[4])) dw[pc.off[4] + j] = ST(LD(dw[pc.off[4] + j]) + tw);
        if (kiln_has(pc.off[5])) db[pc.off[5] + j] = ST(LD(db[pc.off[5] + j]) + tb);
    }
}
