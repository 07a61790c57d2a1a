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

kiln_status cpu_fill(void *dev, const kiln_fill_args *a);
kiln_status cpu_cast(void *dev, const kiln_cast_args *a);
kiln_status cpu_gemm(void *dev, const kiln_gemm_args *a);
kiln_status cpu_axpby(void *dev, const kiln_axpby_args *a);
kiln_status cpu_binary(void *dev, const kiln_binary_args *a);
kiln_status cpu_sum_rows(void *dev, const kiln_sum_rows_args *a);
kiln_status cpu_act_fwd(void *dev, const kiln_act_args *a);
kiln_status cpu_act_bwd(void *dev, const kiln_act_args *a);
kiln_status cpu_reduce(void *dev, const kiln_reduce_args *a);
kiln_status cpu_embed_fwd(void *dev, const kiln_embed_args *a);
kiln_status cpu_embed_bwd(void *dev, const kiln_embed_args *a);
kiln_status cpu_norm_fwd(void *dev, const kiln_norm_args *a);
kiln_status cpu_norm_bwd(void *dev, const kiln_norm_args *a);
kiln_status cpu_softmax_fwd(void *dev, const kiln_softmax_args *a);
kiln_status cpu_softmax_bwd(void *dev, const kiln_softmax_args *a);
kiln_status cpu_entropy_fwd(void *dev, const kiln_entropy_args *a);
kiln_status cpu_entropy_bwd(void *dev, const kiln_entropy_args *a);
kiln_status cpu_dropout_fwd(void *dev, const kiln_dropout_args *a);
kiln_status cpu_dropout_bwd(void *dev, const kiln_dropout_args *a);
kiln_status cpu_xent_fwd(void *dev, const kiln_xent_args *a);
kiln_status cpu_xent_bwd(void *dev, const kiln_xent_args *a);
kiln_status cpu_permute(void *dev, const kiln_permute_args *a);
kiln_status cpu_copy_block(void *dev, const kiln_copy_block_args *a);
kiln_status cpu_sinusoid(void *dev, const kiln_sinusoid_args *a);
kiln_status cpu_check_finite(void *dev, const kiln_finite_args *a);
kiln_status cpu_clip_coef(void *dev, const kiln_clip_args *a);
kiln_status cpu_qmatmul(void *dev, const kiln_qmatmul_args *a);
/* 1: the CPU's quantized product always rounds activations to int8 (cpu_qdot.h) */
int cpu_qmatmul_rounds_x(void *dev);
kiln_status cpu_adam(void *dev, const kiln_adam_args *a);

#endif
