// norm_fwd: LayerNorm / RMSNorm forward (kiln_norm_args), one workgroup per row:
//   LayerNorm: mean, var = mean((x - mean)^2) (two passes: no cancellation),
//              y = (x - mean) * rstd * weight + bias, rstd = 1 / sqrt(var + eps)
//   RMSNorm (rms = KILN_ABI_NORM_RMS): rstd = 1 / sqrt(mean(x^2) + eps), y = x * rstd * weight
// weight, bias, mean and rstd are optional. x, weight, bias and y are data_t (f32, or f16
// in the _f16 build); mean and rstd are f32.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "reduce.glsl"

layout(std430, binding = 0) readonly buffer X { data_t x[]; };
layout(std430, binding = 1) readonly buffer W { data_t w[]; };
layout(std430, binding = 2) readonly buffer B { data_t bias[]; };
layout(std430, binding = 3) writeonly buffer Y { data_t y[]; };
layout(std430, binding = 4) writeonly buffer Mean { float mean_out[]; };
layout(std430, binding = 5) writeonly buffer Rstd { float rstd_out[]; };
layout(push_constant) uniform Push { NORM_FWD_PUSH } pc;

void main() {
    uint r = kiln_group_id();
    if (r >= pc.rows) return;
    uint l = gl_LocalInvocationID.x, cols = pc.cols;
    uint xo = pc.off[0] + r * cols, yo = pc.off[3] + r * cols;
    float m = 0.0, var;
    if (pc.rms == KILN_ABI_NORM_LAYER) {
        float s = 0.0;
        for (uint j = l; j < cols; j += WG) s += LD(x[xo + j]);
        m = kiln_wg_sum(s) / float(cols);
    }
    float s2 = 0.0;
    for (uint j = l; j < cols; j += WG) {
        float d = LD(x[xo + j]) - m;
        s2 += d * d;
    }
    var = kiln_wg_sum(s2) / float(cols);
    float rs = 1.0 / sqrt(var + pc.eps);
    bool hw = kiln_has(pc.off[1]), hb = kiln_has(pc.off[2]);
    for (uint j = l; j < cols; j += WG) {
        float v = (LD(x[xo + j]) - m) * rs;
        if (hw) v *= LD(w[pc.off[1] + j]);
        if (hb) v += LD(bias[pc.off[2] + j]);
        y[yo + j] = ST(v);
    }
    if (l == 0u) {
        if (kiln_has(pc.off[4])) mean_out[pc.off[4] + r] = m;
        if (kiln_has(pc.off[5])) rstd_out[pc.off[5] + r] = rs;
    }
}
