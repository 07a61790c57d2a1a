// sum_rows: out[j] += alpha * sum_i x[i * cols + j] (kiln_sum_rows_args); f32 or f16 data,
// summed in f32.
// A workgroup owns WX columns; its WY rows of invocations sum strided row subsets, then
// meet in shared memory (a fixed order: the result does not depend on timing).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(constant_id = 0) const uint WX = 32;
layout(constant_id = 1) const uint WY = 8;
layout(local_size_x_id = 0, local_size_y_id = 1) in;

layout(std430, binding = 0) readonly buffer X { data_t x[]; };
layout(std430, binding = 1) buffer Out { data_t outv[]; };
layout(push_constant) uniform Push { SUM_ROWS_PUSH } pc;

shared float part[WY][WX];

void main() {
    uint lx = gl_LocalInvocationID.x, ly = gl_LocalInvocationID.y;
    uint j = gl_WorkGroupID.x * WX + lx;
    float s = 0.0;
    if (j < pc.cols)
        for (uint i = ly; i < pc.rows; i += WY) s += LD(x[pc.off[0] + i * pc.cols + j]);
    part[ly][lx] = s;
    barrier();
    if (ly == 0u && j < pc.cols) {
        float t = 0.0;
        for (uint r = 0u; r < WY; r++) t += part[r][lx];
        uint o = pc.off[1] + j;
        outv[o] = ST(LD(outv[o]) + pc.alpha * t);
    }
}
