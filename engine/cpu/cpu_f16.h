/* f16 operands on the CPU reference backend: the f32 kernels run on widened copies.
 *
 * A kernel called with dtype f16 copies each f16 operand into an f32 scratch buffer
 * (cpu_widen_operand), runs its own f32 code on the copies, and rounds the outputs back
 * into the f16 tensors (cpu_widen_finish). That is exactly the contract's arithmetic
 * (backend.h, "Precision": load to f32, compute and accumulate in f32, round once on
 * store; "+=" into f16 is load, add in f32, round), with one implementation of every
 * kernel instead of two that could drift apart, and the f32 paths untouched (they never
 * reach this code). The price is memory and two conversion passes per f16 call, which the
 * reference backend can pay; kernels where it matters convert block by block instead (the
 * GEMM packs f16 operands directly, moves copy 2-byte elements).
 *
 * Operands are element ranges starting at their reference, so views and offsets need
 * nothing special. An operand marked OUT is written back only where the kernel writes it
 * all; "+=" outputs and outputs the kernel writes only in part are INOUT, loaded first so
 * that the elements it leaves alone come back unchanged. Two operands with the same
 * reference (softmax(x, add = x) makes dx and dadd one gradient) share one copy, so their
 * accumulations add up as in f32. */
#ifndef KILN_CPU_F16_H
#define KILN_CPU_F16_H

#include "cpu/cpu_internal.h"

enum { CPU_IN = 1, CPU_OUT = 2, CPU_INOUT = 3 };

#define CPU_WIDEN_MAX 8

typedef struct cpu_widen {
    kiln_status status; /* the first failure (an unsupported dtype, out of memory) */
    int n;
    struct {
        kiln_ref orig;       /* the f16 tensor */
        int64_t count;
        int mode;
        struct kiln_buf buf; /* the f32 copy */
    } op[CPU_WIDEN_MAX];
} cpu_widen;

/* Starts a widening for a kernel called with `dtype`: anything but f16 fails (the caller
 * only gets here for dtypes other than f32). */
void cpu_widen_init(cpu_widen *w, kiln_dtype dtype, const char *kernel);

/* Points *ref at an f32 copy of its `count` f16 elements (loaded when mode has CPU_IN). An
 * absent operand (no buffer) or count <= 0 is left as it is. */
void cpu_widen_operand(cpu_widen *w, kiln_ref *ref, int64_t count, int mode);

/* After the f32 kernel ran with `kernel_status`: on success rounds the CPU_OUT operands
 * back to f16, then frees the copies. Returns the first failure, or KILN_OK. */
kiln_status cpu_widen_finish(cpu_widen *w, kiln_status kernel_status);

#endif
