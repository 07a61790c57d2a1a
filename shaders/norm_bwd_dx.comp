// norm_bwd_dx: LayerNorm / RMSNorm backward, the input gradient (kiln_norm_args), one
// workgroup per row:
//   xhat = (x - mean) * rstd, g = dy * weight
//   LayerNorm: dx += rstd * (g - mean(g) - xhat * mean(g * xhat))
//   RMSNorm:   dx += rstd * (g - xhat * mean(g * xhat))   (no mean; rms = KILN_ABI_NORM_RMS)
// The weight and bias gradients are norm_bwd_params.comp. x, weight, dy and dx are data_t
// (f32, or f16 in the _f16 build); mean and rstd are f32.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "reduce.glsl"

layout(std430, binding = 0) readonly buffer X { data_t x[]; };
layout(std430, binding = 1) readonly buffer W { data_t w[]; };
layout(std430, binding = 2) readonly buffer Mean { float mean_in[]; };
layout(std430, binding = 3) readonly buffer Rstd { float rstd_in[]; };
layout(std430, binding = 4) readonly buffer DY { data_t dy[]; };
layout(std430, binding = 5) buffer DX { data_t dx[]; };
layout(push_constant) uniform Push { NORM_BWD_DX_PUSH } pc;

void main() {
    uint r = kiln_group_id();
    if (r >= pc.rows) return;
    uint l = gl_LocalInvocationID.x, cols = pc.cols;
    uint xo = pc.off[0] + r * cols, dyo = pc.off[4] + r * cols, dxo = pc.off[5] + r * cols;
    float m = pc.rms != KILN_ABI_NORM_LAYER ? 0.0 : mean_in[pc.off[2] + r];
    float rs = rstd_in[pc.off[3] + r];
    bool hw = kiln_has(pc.off[1]);
    float sg = 0.0, sgx = 0.0;
    for (uint j = l; j < cols; j += WG) {
        float g = hw ? LD(dy[dyo + j]) * LD(w[pc.off[1] + j]) : LD(dy[dyo + j]);
        sg += g;
        sgx += g * ((LD(x[xo + j]) - m) * rs);
    }
    float mean_g = pc.rms != KILN_ABI_NORM_LAYER ? 0.0 : kiln_wg_sum(sg) / float(cols);
    float mean_gx = kiln_wg_sum(sgx) / float(cols);
    for (uint j = l; j < cols; j += WG) {
        float g = hw ? LD(dy[dyo + j]) * LD(w[pc.off[1] + j]) : LD(dy[dyo + j]);
        float xhat = (LD(x[xo + j]) - m) * rs;
        dx[dxo + j] = ST(LD(dx[dxo + j]) + rs * (g - mean_g - xhat * mean_gx));
    }
}
