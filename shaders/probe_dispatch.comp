// The tiny kernel of the dispatch-latency probe (kiln_probe_dispatch): one invocation adds
// one to a counter, so consecutive dispatches depend on each other and the host can check
// that every one of them ran.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "probe_push.h"

layout(local_size_x = 1) in;

layout(std430, binding = 0) buffer Counter { int counter[]; };
layout(push_constant) uniform Push { PROBE_DISPATCH_PUSH } pc;

void main() { counter[pc.off[0]] += 1; }
