/* GEMM variants and their per-device tuning (see cl/gemm.cl for the kernels). */
#ifndef KILN_OPENCL_GEMM_H
#define KILN_OPENCL_GEMM_H

#include "opencl/cl_internal.h"

typedef struct cl_gemm_tuning {
    const char *match;   /* a substring of the device name, or NULL: any device of the class */
    int gpu;             /* the class: 1 GPUs and accelerators, 0 CPU devices */
    const char *variant; /* kernel for large products: "cpu" or "tiled" */
    int mr, nr, vw;      /* gemm_cpu: MR x NR block per work-item, VW-wide vectors */
    int tm, tn, kt, wm, wn; /* gemm_tiled: TM x TN tile, KT deep, WM x WN per work-item */
    const char *measured;   /* where the numbers come from */
} cl_gemm_tuning;

/* The entry for a device: the first whose class and name match. */
const cl_gemm_tuning *cl_gemm_tuning_for(const cl_dev *d);
/* Fills d->gemm from the table entry, with KILN_CL_GEMM_<SIZE> overrides for tuning sweeps. */
void cl_gemm_configure(cl_dev *d);
/* The GEMM for at most KILN_ABI_GEMV_ROWS rows of C (cl_gemm_gemv.c): whether it takes these
 * arguments, and the product. */
int cl_gemv_applies(const kiln_gemm_args *g);
kiln_status cl_gemm_gemv(cl_dev *d, const kiln_gemm_args *g);

#endif
