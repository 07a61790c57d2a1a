/* Measuring a device: its ceilings (what the chip can do at best) and device-side timing of
 * any sequence of ops. `kiln bench` builds every figure it reports from these calls, so a
 * kernel's throughput can be given as a fraction of what the same device measured.
 *
 * Every probe runs its own warm-up, then `repeats` timed runs, and reports the median and
 * the spread (min, max) of the device time. Device time comes from GPU timestamps
 * (Vulkan), profiling events (OpenCL) or a monotonic clock around a synchronous run (CPU);
 * wall time is measured by the host around the same runs. */
#ifndef KILN_PROBE_H
#define KILN_PROBE_H

#include "kiln/context.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One measured figure: a rate (GFLOP/s, GB/s) or a latency (microseconds). */
typedef struct kiln_measure {
    double median, min, max;  /* over the timed repeats, of the rate or latency */
    double device_s;          /* median device time of one run, seconds */
    double wall_s;            /* median wall time of one run, seconds */
    int repeats;
} kiln_measure;

/* FMA throughput in GFLOP/s (an FMA counts as 2 FLOPs): independent FMA chains in
 * registers, `width` lanes per operation (1, 2, 4, 8 or 16; a width the device has no
 * vector type for returns KILN_ERR_UNSUPPORTED), enough work to fill every compute unit.
 * dtype KILN_F32 or KILN_F16 (KILN_ERR_UNSUPPORTED without f16 arithmetic). */
kiln_status kiln_probe_fma(kiln_ctx *ctx, kiln_dtype dtype, int width, int repeats,
                           kiln_measure *out);

/* Device memory copy bandwidth in GB/s, counting bytes read plus bytes written, over a
 * buffer of `bytes` (large enough to leave every cache). */
kiln_status kiln_probe_copy(kiln_ctx *ctx, size_t bytes, int repeats, kiln_measure *out);

/* Host -> device (to_device = 1) or device -> host transfer bandwidth in GB/s. */
kiln_status kiln_probe_transfer(kiln_ctx *ctx, size_t bytes, int to_device, int repeats,
                                kiln_measure *out);

/* Dispatch latency in microseconds: the cost of one more (empty-work) kernel in a recorded
 * sequence, i.e. (time of N tiny dispatches) / N. */
kiln_status kiln_probe_dispatch(kiln_ctx *ctx, int repeats, kiln_measure *out);

/* Device timing of arbitrary work: everything recorded between begin and end (ops, their
 * backward, an optimizer step) is timed on the device. end waits for the work and returns
 * its device time and the wall time since begin, in seconds. Not nestable. */
kiln_status kiln_timer_begin(kiln_ctx *ctx);
kiln_status kiln_timer_end(kiln_ctx *ctx, double *device_s, double *wall_s);

/* The device's driver name and version as the backend reports them ("" when unknown). */
const char *kiln_device_driver(const kiln_ctx *ctx);

#ifdef __cplusplus
}
#endif
#endif
