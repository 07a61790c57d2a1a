/* What the host CPU can run, read once with the cpuid instruction.
 *
 * The CPU backend's vector kernels are compiled per function with target attributes and
 * chosen at run time from these flags. They come from cpuid rather than gcc's
 * __builtin_cpu_supports because the feature names that builtin accepts differ between
 * compilers (clang 14 and 15 reject "f16c" and "avx512fp16"), and because a feature is only
 * usable when the operating system saves its registers (XCR0, read with xgetbv), which
 * cpuid alone does not say. On CPUs other than x86-64 every flag is 0. */
#ifndef KILN_CORE_CPU_FEATURES_H
#define KILN_CORE_CPU_FEATURES_H

typedef struct kiln_cpu_features {
    int avx, f16c, fma, avx2;          /* 256-bit registers saved by the OS */
    int avx512f, avx512vl, avx512fp16; /* 512-bit and mask registers saved by the OS */
    int avx512bw, avx512vnni;          /* byte/word ops and the integer dot products (vpdpwssd) */
    int amd;                           /* the vendor is AMD (tuning choices, not features) */
} kiln_cpu_features;

/* The host CPU's, read on the first call (once, whichever thread comes first). */
const kiln_cpu_features *kiln_cpu(void);

#endif
