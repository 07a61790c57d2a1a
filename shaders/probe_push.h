/* Push-constant layouts of the device-measurement shaders (shaders/probe_*.comp and
 * engine/vulkan/vk_probe.c; the conventions of push.h). */
#ifndef KILN_PROBE_PUSH_H
#define KILN_PROBE_PUSH_H

#include "push.h"

/* probe_fma: out; `iters` rounds on each of `items` invocations, a = fma(a, mul, add) */
#define PROBE_FMA_OPS 1
#define PROBE_FMA_PUSH u32 off[PROBE_FMA_OPS]; u32 items; u32 iters; f32 mul; f32 add;
/* probe_copy: src, dst; n 16-byte words */
#define PROBE_COPY_OPS 2
#define PROBE_COPY_PUSH u32 off[PROBE_COPY_OPS]; u32 n;
/* probe_dispatch: counter */
#define PROBE_DISPATCH_OPS 1
#define PROBE_DISPATCH_PUSH u32 off[PROBE_DISPATCH_OPS];

#endif
