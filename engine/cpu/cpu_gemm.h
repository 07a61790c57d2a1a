/* The CPU GEMM's parts: the register-blocked micro-kernels (cpu_gemm_kernels.c), the
 * blocked, packed, threaded driver (cpu_gemm.c) and the plain reference the tests compare
 * the fast path with (cpu_gemm_reference.c).
 *
 * The driver packs op(A) into panels of MR rows and op(B) into panels of NR columns, both
 * f32 and k-major, so a micro-kernel only ever reads two contiguous streams:
 *   a panel: a[p * MR + i] = op(A)(row0 + i, k0 + p)     (rows past M are zero)
 *   b panel: b[p * NR + j] = op(B)(k0 + p, col0 + j)     (columns past N are zero)
 * and accumulates an MR x NR tile of C over kc steps in registers. */
#ifndef KILN_CPU_GEMM_H
#define KILN_CPU_GEMM_H

#include "cpu/cpu_internal.h"

/* How a micro-kernel folds its tile into C. On the first block along K it applies beta
 * (beta == 0: C's old contents are never read, even NaN) and the bias; on later blocks it
 * adds. */
typedef struct cpu_gemm_epilogue {
    float alpha, beta;
    const float *bias; /* bias of the tile's first column, or NULL */
    int first;         /* 1 on the first K block */
} cpu_gemm_epilogue;

/* C[0..mv, 0..nv) (row stride ldc) gets the MR x NR tile of a[kc x MR] b[kc x NR];
 * mv <= MR and nv <= NR trim the edge tiles. */
typedef void (*cpu_gemm_micro_fn)(int64_t kc, const float *a, const float *b, float *c,
                                  int64_t ldc, int mv, int nv, const cpu_gemm_epilogue *e);

/* Fast packs for the common f32 layouts (full panels only; the driver's generic loops do
 * the rest): src is row-major with row stride ld, and columns [0, kc) are packed.
 *   pack_a:  MR rows of A into an MR-row panel (op(A) = A)
 *   pack_at: kc rows of MR columns of A, which are rows of op(A) = A^T, into an MR-row panel
 *   pack_b:  kc rows of NR columns of B into an NR-column panel (op(B) = B)
 *   pack_bt: NR rows of B, which are columns of op(B) = B^T, into an NR-column panel */
typedef void (*cpu_gemm_pack_fn)(float *dst, const float *src, int64_t ld, int64_t kc);

typedef struct cpu_gemm_kernel {
    const char *name; /* "avx512", "avx2", "generic" */
    int mr, nr;
    int fused; /* 1: a multiply-add is rounded once (FMA); 0: the product, then the sum */
    cpu_gemm_micro_fn run;
    cpu_gemm_pack_fn pack_a, pack_at, pack_b, pack_bt; /* each may be NULL */
} cpu_gemm_kernel;

/* The kernels this build has for this CPU, best first, into out[0..cap); returns how many
 * (the generic kernel is always present, and last). */
#define CPU_GEMM_MAX_KERNELS 3
int cpu_gemm_kernels(const cpu_gemm_kernel **out, int cap);

/* The kernel cpu_gemm uses: the best one, or the one named by the environment variable
 * KILN_CPU_GEMM_KERNEL when it is available. */
const cpu_gemm_kernel *cpu_gemm_active_kernel(void);
/* Makes cpu_gemm use the named kernel (tests run every kernel the CPU has). Returns 0 when
 * the kernel does not exist or the CPU lacks it. Not thread-safe: call between GEMMs. */
int cpu_gemm_use_kernel(const char *name);

/* 1 while the GEMM has recently seen its OpenMP team wait milliseconds for a thread the OS
 * had not scheduled (other processes keep the cores busy); GEMMs then run on one thread.
 * Other kernels may consult it to skip their parallel regions too. */
int cpu_threads_contended(void);
/* Tests turn the backoff off (0) so that the threaded paths always run. */
void cpu_gemm_set_backoff(int enabled);

/* K is summed in blocks of CPU_GEMM_KC terms: each block's sum starts from zero and is folded
 * into C by cpu_gemm_store_tile (the first block applies beta and the bias). A KC x NR slice
 * of a B panel (32 KiB for NR = 32) stays in L1. */
#define CPU_GEMM_KC 256

/* The path for a few rows of C (decoding a token), cpu_gemv.c: B is read where it lies
 * instead of packed. The same arithmetic as cpu_gemm's, term for term, so a row of C has the
 * same bits whichever path computed it. */
#define CPU_GEMV_MAX_ROWS 4
/* 1 when cpu_gemv takes these arguments (an f32 C of at most CPU_GEMV_MAX_ROWS rows, K > 0,
 * and a B the kernel can read in place), for the kernel kn. */
int cpu_gemv_applies(const kiln_gemm_args *a, const cpu_gemm_kernel *kn);
kiln_status cpu_gemv(const kiln_gemm_args *a, const cpu_gemm_kernel *kn);
/* Tests turn the GEMV path off (0) to compare it with the blocked GEMM. */
void cpu_gemm_set_gemv(int enabled);

/* An operand as the packs read it: op(X)(i, p) = X[i * ld + p], or X[p * ld + i] when
 * trans; f32 or f16 elements from base. */
typedef struct cpu_gemm_operand {
    const char *base;
    kiln_dtype dtype;
    int64_t ld;
    int trans;
} cpu_gemm_operand;

/* The driver's packs, for kernels that run the micro-kernels on tiles of their own (the
 * fused attention): rows [i0, i0 + mv) x [p0, p0 + kc) of op(A) into one MR-row panel, and
 * rows [p0, p0 + kc) x columns [j0, j0 + nv) of op(B) into one NR-column panel; the rows or
 * columns past mv or nv are zeros. */
void cpu_gemm_pack_a_panel(float *dst, const cpu_gemm_operand *A, int64_t i0, int mv, int64_t p0, int64_t kc,
                           const cpu_gemm_kernel *kn);
void cpu_gemm_pack_b_panel(float *dst, const cpu_gemm_operand *B, int64_t p0, int64_t kc, int64_t j0, int nv,
                           const cpu_gemm_kernel *kn);

/* The plain triple loop with double accumulation: the oracle of the fast path. */
kiln_status cpu_gemm_reference(void *dev, const kiln_gemm_args *a);

/* Writes one finished tile (row stride tile_ld) into C per the epilogue. Each kernel
 * inlines it, so the loops compile for the kernel's instruction set. */
static inline void cpu_gemm_store_tile(const float *tile, int tile_ld, float *c, int64_t ldc,
                                       int mv, int nv, const cpu_gemm_epilogue *e) {
    const float alpha = e->alpha, beta = e->beta;
    const float *bias = e->bias;
    for (int i = 0; i < mv; i++) {
        float *row = c + i * ldc;
        const float *t = tile + i * tile_ld;
        if (!e->first) {
            for (int j = 0; j < nv; j++) row[j] += alpha * t[j];
        } else if (beta == 0.0f) {
            if (bias)
                for (int j = 0; j < nv; j++) row[j] = alpha * t[j] + bias[j];
            else
                for (int j = 0; j < nv; j++) row[j] = alpha * t[j];
        } else {
            if (bias)
                for (int j = 0; j < nv; j++) row[j] = beta * row[j] + alpha * t[j] + bias[j];
            else
                for (int j = 0; j < nv; j++) row[j] = beta * row[j] + alpha * t[j];
        }
    }
}

#endif
