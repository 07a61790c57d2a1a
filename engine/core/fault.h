/* Fault injection, for tests: KILN_FAULT makes a healthy device fail the way real ones
 * do, so that tests can show what kiln does then (training stops with one line and its
 * last checkpoint intact; `kiln verify` names a wrong kernel).
 *
 *   KILN_FAULT=device-lost@N   the N-th kernel call (1-based, every slot counted) and every
 *                              one after it fail with KILN_ERR_DEVICE, as after
 *                              VK_ERROR_DEVICE_LOST or CL_OUT_OF_RESOURCES
 *   KILN_FAULT=oom@N           the N-th device allocation fails with KILN_ERR_MEMORY
 *   KILN_FAULT=wrong:KERNEL    every call of the kernel slot KERNEL (gemm, norm_fwd,
 *                              softmax_bwd, ... : the slots of core/kernel_slots.def) on a GPU
 *                              backend returns a wrong first element of its output (off by
 *                              10% + 0.1), as a miscompiled kernel would; the CPU backend,
 *                              the reference, stays right. `kiln verify` must name it.
 *   KILN_FAULT=count           nothing fails; kiln_close prints how many kernel calls and
 *                              device allocations the context made, for choosing N
 *
 * Counts are per process. Compiled in with KILN_FAULTS (CMake option, ON in builds with
 * the tests); without it the switch is ignored and costs nothing. A malformed value is
 * reported once on stderr and ignored. */
#ifndef KILN_CORE_FAULT_H
#define KILN_CORE_FAULT_H

#include <stddef.h>

#include "kiln/context.h"

#ifdef KILN_FAULTS
/* Nonzero once KILN_FAULT was read and asks for something: the only cost on the hot path. */
extern int kiln_fault_armed;
/* Reads KILN_FAULT (once per process): kiln_open calls it. */
void kiln_fault_init(void);
/* A kernel call about to run on `backend`: nonzero (the error set) when it must fail. */
int kiln_fault_kernel(const char *backend, const char *slot);
/* A device allocation about to run: nonzero (the error set) when it must fail. */
int kiln_fault_alloc(const char *backend, size_t bytes);
/* After a kernel call that returned `status`: with wrong:SLOT armed for this slot and a
 * GPU backend, changes the first element of its output. Returns status (or the error of
 * the change). */
kiln_status kiln_fault_result(kiln_ctx *ctx, const char *slot, const void *args, kiln_status status);
/* KILN_FAULT=count: prints the counts on stderr. */
void kiln_fault_report(void);
#else
#define kiln_fault_armed 0
static inline void kiln_fault_init(void) {}
static inline int kiln_fault_kernel(const char *backend, const char *slot) { return (void)backend, (void)slot, 0; }
static inline int kiln_fault_alloc(const char *backend, size_t bytes) { return (void)backend, (void)bytes, 0; }
static inline kiln_status kiln_fault_result(kiln_ctx *ctx, const char *slot, const void *args, kiln_status status) {
    return (void)ctx, (void)slot, (void)args, status;
}
static inline void kiln_fault_report(void) {}
#endif

#endif
