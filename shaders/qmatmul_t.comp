// qmatmul_t: y[m, k] = sum_n dy[m, n] w[n, k], the transposed product with a matrix quantized
// in ggml's blocks (kiln_qmatmul_args, kiln/quant.h: Q8_0 .. Q6_K), the gradient of x
// through qmatmul.comp's product; f32 arithmetic on dy as given. dy and y are data_t (f32,
// or f16 in the _f16 build).
//
// A workgroup owns WG consecutive output columns, one per invocation (WG a multiple of 32:
// WG / 32 units of qblock.glsl along a row of W), and ROWS rows of dy. It walks W's rows
// PANEL at a time: its invocations decode the panel's units, each unit once for the
// workgroup, into shared memory, and load the panel's dy values beside them; then each
// invocation adds the panel's products for its column to its ROWS sums, kept in registers.
// Every output is summed and written by one invocation: no atomics, no subgroup operation,
// and 4.5 KiB of shared memory (WG = 64), so minimum-limits devices run it as it is.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(constant_id = 0) const uint WG = 64;
layout(local_size_x_id = 0) in;

// the weights' block format (KILN_ABI_Q*): a constant, so that each format's pipeline holds
// only its own decoding
layout(constant_id = 1) const uint FORMAT = 0;

layout(std430, binding = 0) readonly buffer DY { data_t dy[]; };
layout(std430, binding = 1) readonly buffer W { uint w[]; };
layout(std430, binding = 2) writeonly buffer Y { data_t y[]; };
layout(push_constant) uniform Push { QMATMUL_T_PUSH } pc;

#define ROWS KILN_ABI_QMATMUL_T_ROWS
#define PANEL KILN_ABI_QMATMUL_T_PANEL

shared float wv[PANEL * WG];   // the panel's values: row p of the panel at p * WG
shared float dv[ROWS * PANEL]; // dy[i0 + t, r0 + p] at t * PANEL + p

#include "qblock.glsl"

// Decodes unit `b` of the workgroup's tile in row r of W into wv's row p: value j is
// d * sc[j / 16] * q_j + mn (qblock.glsl's qunit).
void decode(uint r, uint p, uint b, uint c0) {
    uint packed[8];
    float d, mn;
    ivec2 sc;
    qunit(FORMAT, pc.off[1] + r * pc.row_words, c0 / 32u + b, packed, d, sc, mn);
    for (uint j = 0u; j < 32u; j++)
        wv[p * WG + b * 32u + j] = d * float((int(packed[j / 4u] << (24u - 8u * (j % 4u))) >> 24) * sc[j / 16u]) + mn;
}

void main() {
    uint l = gl_LocalInvocationID.x, g = kiln_group_id();
    uint col_groups = (pc.k + WG - 1u) / WG, tiles = (pc.m + ROWS - 1u) / ROWS;
    if (g >= col_groups * tiles) return; // a whole workgroup past the grid's end
    uint c0 = (g % col_groups) * WG, i0 = (g / col_groups) * ROWS;
    uint rows = min(ROWS, pc.m - i0), per_row = WG / 32u;
    uint live_units = min(per_row, (pc.k - c0) / 32u); // k is whole units
    float acc[ROWS];
    for (uint t = 0u; t < ROWS; t++) acc[t] = 0.0;
    for (uint r0 = 0u; r0 < pc.n; r0 += PANEL) {
        uint panel = min(PANEL, pc.n - r0);
        barrier(); // the previous panel's readers are done
        for (uint u = l; u < PANEL * per_row; u += WG) {
            uint p = u / per_row, b = u % per_row;
            if (p < panel && b < live_units) {
                decode(r0 + p, p, b, c0);
            } else {
                for (uint j = 0u; j < 32u; j++) wv[p * WG + b * 32u + j] = 0.0;
            }
        }
        for (uint e = l; e < ROWS * PANEL; e += WG) {
            uint t = e / PANEL, p = e % PANEL;
            dv[e] = t < rows && p < panel ? LD(dy[pc.off[0] + (i0 + t) * pc.n + r0 + p]) : 0.0;
        }
        barrier();
        for (uint p = 0u; p < panel; p++) {
            float wc = wv[p * WG + l];
            for (uint t = 0u; t < ROWS; t++) acc[t] += dv[t * PANEL + p] * wc;
        }
    }
    uint c = c0 + l;
    if (c < pc.k)
        for (uint t = 0u; t < rows; t++) y[pc.off[2] + (i0 + t) * pc.k + c] = ST(acc[t]);
}
