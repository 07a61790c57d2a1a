// The memory-bandwidth ceiling (kiln_probe_copy): dst = src in 16-byte words, one word per
// invocation, so that every access is a full-width, perfectly coalesced load or store.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "probe_push.h"

layout(constant_id = 0) const uint WG = 256;
layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer Src { uvec4 src[]; };
layout(std430, binding = 1) writeonly buffer Dst { uvec4 dst[]; };
layout(push_constant) uniform Push { PROBE_COPY_PUSH } pc;

void main() {
    uint i = kiln_group_id() * WG + gl_LocalInvocationID.x;
    if (i < pc.n) dst[pc.off[1] + i] = src[pc.off[0] + i];
}
