/* The CPU reference backend: plain C over host memory, parallel with OpenMP. Each kernel
 * family lives in its own cpu_<family>.c; this header declares them all. */
#ifndef KILN_CPU_INTERNAL_H
#define KILN_CPU_INTERNAL_H

#include "core/internal.h"

struct kiln_buf {
    void *ptr;
    size_t size;
};

/* A typed pointer to a reference's first element. */
#define CPU_PTR(ref, type) ((type *)(void *)((char *)(ref).buf->ptr + (ref).off))
#define CPU_HAS(ref) ((ref).buf != NULL)

/* Minimum elements for a memory-bound kernel (a copy, an add) to fork OpenMP threads:
 * below this a parallel region costs more than it saves. */
#define CPU_PAR_MIN 32768

/* The OpenMP team size the kernels fork (1 without OpenMP; cpu_backend.c). */
int cpu_max_threads(void);

/* 1 while the GEMM has recently seen OpenMP joins wait for threads the OS had not
 * scheduled (a loaded machine; defined in cpu_gemm.c). */
int cpu_threads_contended(void);

/* Whether a kernel with `work` elements should run its loop on OpenMP threads: only when
 * the work is above its break-even `min_work` and the machine is not oversubscribed (a
 * join then waits a scheduler period for a descheduled partner). */
static inline int cpu_use_threads(int64_t work, int64_t min_work) {
    return work > min_work && !cpu_threads_contended();
}

/* the kernels, cpu_<slot> for each slot of core/kernel_slots.def */
#define KILN_SLOT(family, slot, args, output, output_dtype) kiln_status cpu_##slot(void *dev, const args *a);
#include "core/kernel_slots.def"
/* 1: the CPU's quantized product always rounds activations to int8 (cpu_quant_dot.h) */
int cpu_qmatmul_rounds_x(void *dev);

#endif
