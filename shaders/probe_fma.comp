// The FMA ceiling (kiln_probe_fma; the contract is kiln_probe_fma_args in
// engine/core/backend.h). Each invocation keeps 12 scalar accumulators, as CHAINS vectors of
// WIDTH lanes, and runs `iters` rounds of a = fma(a, mul, add) on all of them; nothing else
// happens in the loop (UNROLL rounds per iteration), so the time is pure arithmetic. Where a
// device runs invocations as SIMD lanes (lavapipe, CPU devices) each scalar lane of an
// invocation is one vector register: 12 chains cover FMA latency x 2 units (8) and, with
// mul and add, fit 16 AVX2 registers (16 chains measured 7% slower on lavapipe: spills);
// GPUs hide latency across invocations and get high occupancy from the small footprint.
// mul and add are push constants: the compiler cannot fold the recurrence. `precise`
// keeps fma() one fused operation and forbids reassociation.
//
// Builds (shaders/variants.txt): WIDTH 1, 2 or 4 (GLSL has no wider vectors), f32 or, with
// -DPROBE_F16, f16 arithmetic (shaderFloat16; the host checks it).
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#ifdef PROBE_F16
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#define S float16_t
#define V2 f16vec2
#define V4 f16vec4
#else
#define S float
#define V2 vec2
#define V4 vec4
#endif
#include "flat.glsl"
#include "probe_push.h"

#ifndef WIDTH
#define WIDTH 1
#endif
#define CHAINS (KILN_ABI_VK_PROBE_FMA_ACCUMULATORS / WIDTH)  // the host reports it
// rounds per loop iteration: on lavapipe every value carried round a loop costs a masked
// blend per iteration, so the loop must be long for the arithmetic to dominate: 12 chains x
// 8 rounds measured 14% below 12 x 24 or 12 x 32, which agree (the ceiling). Its emulated
// f16 (convert, FMA, convert) ran 35% slower at 8 than at 4.
#ifdef PROBE_F16
#define UNROLL 4u
#else
#define UNROLL 24u
#endif
#if WIDTH == 1
#define V S
#elif WIDTH == 2
#define V V2
#else
#define V V4
#endif

layout(std430, binding = 0) writeonly buffer Out { float outv[]; };
layout(push_constant) uniform Push { PROBE_FMA_PUSH } pc;

// accumulator k = chain * WIDTH + lane starts at 1 + (k % 32) / 16
S start(int k) { return S(1.0 + float(k % 32) / 16.0); }

void main() {
    uint id = kiln_flat_id();
    // no early return for the extra invocations of the last workgroup: on lavapipe a loop
    // under a divergent branch pays its masks on every operation; only the store is guarded
    precise V a[CHAINS];
    [[unroll]] for (int j = 0; j < CHAINS; j++) {
#if WIDTH == 1
        a[j] = start(j);
#elif WIDTH == 2
        a[j] = V(start(2 * j), start(2 * j + 1));
#else
        a[j] = V(start(4 * j), start(4 * j + 1), start(4 * j + 2), start(4 * j + 3));
#endif
    }
    V m = V(S(pc.mul)), c = V(S(pc.add));
    uint blocks = pc.iters / UNROLL;
    for (uint i = 0u; i < blocks; i++) {
        [[unroll]] for (uint r = 0u; r < UNROLL; r++) {
            [[unroll]] for (int j = 0; j < CHAINS; j++) a[j] = fma(a[j], m, c);
        }
    }
    for (uint i = blocks * UNROLL; i < pc.iters; i++) {
        [[unroll]] for (int j = 0; j < CHAINS; j++) a[j] = fma(a[j], m, c);
    }
    float sum = 0.0;
    [[unroll]] for (int j = 0; j < CHAINS; j++) {
#if WIDTH == 1
        sum += float(a[j]);
#else
        [[unroll]] for (int l = 0; l < WIDTH; l++) sum += float(a[j][l]);
#endif
    }
    if (id < pc.items) outv[pc.off[0] + id] = sum;
}
