/* Shared test machinery.
 *
 * An op test is a table of kt_case: a function that builds an op's output from its inputs,
 * and the inputs' shapes. The same table serves every backend:
 *   --backend cpu      each case's backward is checked against central finite differences;
 *   --backend vulkan   (or opencl) each case's forward output and every input gradient are
 *                      compared with the CPU reference on the same inputs.
 * Then, on every backend, each case with floating inputs runs again in f16 (mixed
 * precision): its floating inputs are rounded to f16 and built as f16 tensors on the
 * backend under test, the CPU reference runs the same op in f32 on the same rounded
 * values, and the output and every gradient (which must be f16 like its input) are
 * compared under the case's f16_tol. A device that cannot store f16
 * (kiln_supports_dtype) skips these runs with a note.
 * All comparisons use the normalized error sum (a-b)^2 / sum a^2; NaN never passes.
 * Hand-computed forward tests are ordinary Check tests that use kt_ctx(). */
#ifndef KILN_TESTUTIL_H
#define KILN_TESTUTIL_H

#include <check.h>

#include "kiln/kiln.h"

#define KT_MAX_INPUTS 6

typedef enum kt_init {
    KT_NORMAL = 0, /* normal with mean lo and std hi (hi 0 means 1) */
    KT_UNIFORM,    /* uniform in [lo, hi) */
    KT_AWAY0,      /* N(0, 1) pushed away from 0 by at least 0.1: for kinks (ReLU) */
    KT_INT         /* i32 uniform in [lo, hi] (ids, targets, lengths) */
} kt_init;

/* Case tables use designated initializers; a field left out is zero, so an input written
 * {.dtype = KILN_F32, .ndim = 2, .shape = {7, 5}, .grad = 1} is drawn from N(0, 1). */
typedef struct kt_input {
    kiln_dtype dtype;
    int ndim;
    int64_t shape[KILN_MAX_DIMS];
    kt_init init;
    float lo, hi;
    int grad; /* 1: requires grad, checked by backward tests */
} kt_input;

/* Builds the output from the inputs (all on the same context). May create further
 * constant tensors itself. Returns NULL on error. */
typedef kiln_tensor *(*kt_build_fn)(kiln_tensor **in, const void *param);

typedef struct kt_case {
    const char *name;
    kt_build_fn build;
    const void *param;
    int n_in;
    kt_input in[KT_MAX_INPUTS];
    double fwd_tol; /* normalized error of the forward output vs CPU (0: 1e-10) */
    double bwd_tol; /* normalized error of each gradient (0: 1e-4 vs FD, 1e-8 vs CPU) */
    double fd_eps;  /* finite-difference step (0: 1e-2) */
    int no_grad;    /* the op is not differentiable: forward comparison only */
    double f16_tol; /* normalized error of the f16 run's output and gradients vs f32 on the
                       same rounded inputs (0: KT_F16_TOL); loosen only with a comment why */
    int no_f16;     /* the case does not run in f16 (say why next to it) */
} kt_case;

/* The default f16 tolerance: f16 keeps 11 significant bits, so one rounding of every
 * element leaves a normalized error near 2^-24 (6e-8), and a few roundings along a
 * forward and backward stay well below this. */
#define KT_F16_TOL 1e-5

/* The backend this test process runs on ("cpu" unless --backend was given). */
const char *kt_backend(void);
/* A context on that backend, opened once per process (closed at exit). */
kiln_ctx *kt_ctx(void);
/* A context on the CPU reference. */
kiln_ctx *kt_cpu(void);

/* 1 when the backend under test can store f16. Otherwise prints a note that `what` (a test,
 * or the part of one that needs f16) is skipped, and returns 0: Vulkan's minimum-limits
 * mode, like a device without 16-bit storage, refuses f16 tensors. */
int kt_f16_ok(const char *what);

/* A persistent tensor with the given values (f32 values converted to the dtype). */
kiln_tensor *kt_tensor(kiln_ctx *ctx, kiln_dtype dtype, int ndim, const int64_t *shape,
                       const float *values);
/* A persistent i32 tensor. */
kiln_tensor *kt_tensor_i32(kiln_ctx *ctx, int ndim, const int64_t *shape, const int32_t *values);

/* Asserts that t holds `expected` (n values) within tol absolute + tol relative. */
void kt_expect_values(const kiln_tensor *t, const float *expected, int64_t n, double tol);

/* Sum (a-b)^2 / sum a^2 (with a small floor on the denominator); inf when NaN appears. */
double kt_normalized_error(const float *a, const float *b, int64_t n);

/* Runs one case on the process's backend: FD gradient check on cpu, CPU comparison
 * elsewhere. Fails the current Check test with a message on mismatch. */
void kt_run_case(const kt_case *c);
/* Runs one case in f16 on the process's backend against the CPU in f32 (see above); does
 * nothing for a case without floating inputs or with no_f16. */
void kt_run_case_f16(const kt_case *c);

/* The NAME of --backend NAME in argv ("cpu" without one), which kt_backend() returns from
 * then on. kt_main calls it; a program that looks at the backend before kt_main may too. */
const char *kt_parse_backend(int argc, char **argv);

/* main() for a test program: parses --backend NAME, exits 77 (CTest "skipped") when that
 * backend is not available, builds a suite from `add_tests` (hand-written tests) plus one
 * loop test over `cases`, runs it and returns the failure count. */
int kt_main(int argc, char **argv, const char *suite_name, void (*add_tests)(Suite *s, TCase *tc),
            const kt_case *cases, int n_cases);

/* For backend-specific test programs: 77 (CTest's "skipped") with the reason on stderr when
 * `backend` cannot be opened here, else 0. */
int kt_require_backend(const char *backend);
/* Runs the tests that `add_tests` puts into one TCase named `tcase_name`; returns 0 when all
 * pass, 1 otherwise. */
int kt_run_tests(const char *suite_name, const char *tcase_name, void (*add_tests)(TCase *tc));
/* kt_run_tests with *ctx opened on `backend` for the tests to share (77 when the backend
 * cannot be opened here, 1 when the open fails after all), closed afterwards. */
int kt_run_tests_on(const char *backend, kiln_ctx **ctx, const char *suite_name, const char *tcase_name,
                    void (*add_tests)(TCase *tc));

#endif
