// The start of a flat kernel: a 1-D grid of workgroups of WG invocations, WG being
// specialization constant 0, which the host sets (vk_run_flat, or spec[0] and vk_grid_1d).
// The grid may be split over x and y (vk_grid_1d): kiln_flat_id() is the invocation's
// index along the whole grid, which may run past the work (the last workgroup, and the
// extra ones of a split grid).
#ifndef KILN_FLAT_GLSL
#define KILN_FLAT_GLSL

#include "common.glsl"

layout(constant_id = 0) const uint WG = 64;
layout(local_size_x_id = 0) in;

uint kiln_flat_id() { return kiln_group_id() * WG + gl_LocalInvocationID.x; }

#endif
