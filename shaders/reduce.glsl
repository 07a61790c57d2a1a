// The start of a kernel that reduces across a 1-D workgroup (one row per workgroup, or
// shares of a segment): common.glsl, the workgroup size WG (specialization constant 0, a
// power of two), and workgroup-wide sum and max. Included first, right after #version and
// the include extension, so that its #extension precedes every other token.
//
// With subgroup arithmetic each subgroup reduces in registers and the partials meet in
// shared memory; the KILN_NO_SUBGROUP build (the "_shared" variants, for devices without
// subgroup arithmetic) uses a shared-memory tree. Neither assumes a subgroup size. Every
// invocation gets the result, and every invocation adds the partials in the same order,
// so the result is the same everywhere.
#ifndef KILN_REDUCE_GLSL
#define KILN_REDUCE_GLSL

#ifndef KILN_NO_SUBGROUP
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif
#include "common.glsl"

layout(constant_id = 0) const uint WG = 64;
layout(local_size_x_id = 0) in;

shared float kiln_red[WG];

#ifdef KILN_NO_SUBGROUP
float kiln_wg_sum(float v) {
    uint l = gl_LocalInvocationID.x;
    barrier();  // earlier readers of kiln_red are done
    kiln_red[l] = v;
    barrier();
    for (uint s = WG / 2u; s > 0u; s >>= 1u) {
        if (l < s) kiln_red[l] += kiln_red[l + s];
        barrier();
    }
    return kiln_red[0];
}
float kiln_wg_max(float v) {
    uint l = gl_LocalInvocationID.x;
    barrier();
    kiln_red[l] = v;
    barrier();
    for (uint s = WG / 2u; s > 0u; s >>= 1u) {
        if (l < s) kiln_red[l] = max(kiln_red[l], kiln_red[l + s]);
        barrier();
    }
    return kiln_red[0];
}
#else
float kiln_wg_sum(float v) {
    v = subgroupAdd(v);
    barrier();
    if (subgroupElect()) kiln_red[gl_SubgroupID] = v;
    barrier();
    float s = 0.0;
    for (uint i = 0u; i < gl_NumSubgroups; i++) s += kiln_red[i];
    return s;
}
float kiln_wg_max(float v) {
    v = subgroupMax(v);
    barrier();
    if (subgroupElect()) kiln_red[gl_SubgroupID] = v;
    barrier();
    float s = kiln_red[0];
    for (uint i = 1u; i < gl_NumSubgroups; i++) s = max(s, kiln_red[i]);
    return s;
}
#endif

#endif
