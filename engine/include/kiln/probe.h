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
 * registers, `width` lanes per operation (1, 2, 4, 8, 16, or 32 where a device has 32-lane
 * f16 vectors: AVX512-FP16 CPUs; a width the device has no vector type for returns
 * KILN_ERR_UNSUPPORTED with a message), enough work to fill every compute unit. dtype
 * KILN_F32 or KILN_F16 (KILN_ERR_UNSUPPORTED without f16 arithmetic). The device's ceiling
 * for a dtype is the best width's figure; on a shared machine take `max` (the best run):
 * the median drops with every run that another process interrupted. Every item's result is
 * checked after the timed runs: a kernel that computed the wrong thing is KILN_ERR_DEVICE,
 * never a figure. Each run lasts at least 30 ms on the device (up to 4x what a run costs
 * besides arithmetic: longer on a loaded machine, where a CPU thread may wait ~25 ms to be
 * scheduled). */
kiln_status kiln_probe_fma(kiln_ctx *ctx, kiln_dtype dtype, int width, int repeats,
                           kiln_measure *out);

/* Device memory copy bandwidth in GB/s, counting bytes read plus bytes written, over a
 * buffer of `bytes` (large enough to leave every cache; at least 4096; rounded down to a
 * multiple of 256 and to the device's largest buffer). */
kiln_status kiln_probe_copy(kiln_ctx *ctx, size_t bytes, int repeats, kiln_measure *out);

/* Host -> device (to_device = 1) or device -> host transfer bandwidth in GB/s, of `bytes`
 * (sized as for kiln_probe_copy) through kiln's own upload/download path, from an idle
 * device: timed by the host between two syncs (what a caller waits for its bytes, staging
 * copies included), so device_s equals wall_s here. */
kiln_status kiln_probe_transfer(kiln_ctx *ctx, size_t bytes, int to_device, int repeats,
                                kiln_measure *out);

/* Dispatch latency in microseconds: the cost of one more (empty-work) kernel in a recorded
 * sequence, i.e. (device time of N tiny dispatches) / N. Each tiny kernel depends on the
 * previous one (a barrier between them), as the kernels of a training step do. On the CPU
 * backend a "dispatch" is the fork and join of the OpenMP team a parallel kernel pays. */
kiln_status kiln_probe_dispatch(kiln_ctx *ctx, int repeats, kiln_measure *out);

/* Device timing of arbitrary work: everything recorded between begin and end (ops, their
 * backward, an optimizer step) is timed on the device. end waits for the work and returns
 * its device time and the wall time since begin, in seconds (either pointer may be NULL).
 * Device time is elapsed time on the device's clock from the start of the first timed
 * command to the end of the last, so a wait for the host inside the interval (a download)
 * counts. begin may wait for work recorded before it (Vulkan does), so that none of it is
 * timed; that wait is not in the wall time either. Not nestable: a second begin, or an end
 * without a begin, is KILN_ERR_STATE. A timer still running when the context closes is
 * ended and freed. */
kiln_status kiln_timer_begin(kiln_ctx *ctx);
kiln_status kiln_timer_end(kiln_ctx *ctx, double *device_s, double *wall_s);

/* Seconds on the monotonic wall clock: the one clock of the engine's timings, for hosts
 * that time work of their own (steps, reductions) the same way. */
double kiln_clock_wall(void);

/* The device's driver name and version as the backend reports them ("" when unknown). */
const char *kiln_device_driver(const kiln_ctx *ctx);

#ifdef __cplusplus
}
#endif
#endif
