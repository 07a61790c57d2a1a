// The cooperative-matrix GEMM's epilogue: C[b][m][n] = alpha * P[b][m][n] + beta * C
// (+ bias[n]), from the padded f32 product P (row stride np), for m < M, n < N only.
// beta == 0 overwrites C without reading it.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(constant_id = 0) const uint WG = 64;
layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer P { float p[]; };
layout(std430, binding = 1) buffer C { float c[]; };
layout(std430, binding = 2) readonly buffer Bias { float bias[]; };
layout(push_constant) uniform Push { GEMM_COOPMAT_EPILOGUE_PUSH } pc;

void main() {
    uint n = gl_GlobalInvocationID.x, m = gl_WorkGroupID.y, b = gl_WorkGroupID.z;
    if (n >= pc.n) return;
    uint ci = pc.off[1] + b * pc.stride_c + m * pc.ldc + n;
    float v = pc.alpha * p[pc.off[0] + b * pc.stride_p + m * pc.np + n];
    if (pc.beta != 0.0) v += pc.beta * c[ci];
    if (kiln_has(pc.off[2])) v += bias[pc.off[2] + n];
    c[ci] = v;
}
