/* Shared test machinery.
 *
 * An op test is a table of cases (kiln_verify_case, kiln/verify.h): a function that builds
 * an op's output from its inputs, and the inputs' shapes. The op tables are the library's
 * (engine/verify/cases_*.c), the same ones `kiln verify` runs on users' devices; test
 * programs for host layers or backend-specific kernels write tables of their own in the
 * same form. Every table serves every backend:
 *   --backend cpu      each case's backward is checked against central finite differences;
 *   --backend vulkan   (or opencl) each case's forward output and every input gradient are
 *                      compared with the CPU reference on the same inputs;
 * then each case with floating inputs runs again in f16 against the CPU in f32 on the same
 * rounded inputs (kiln/verify.h says how). A device that cannot store f16 skips those runs
 * with a note.
 * Hand-computed forward tests are ordinary Check tests that use kt_ctx(). */
#ifndef KILN_TESTUTIL_H
#define KILN_TESTUTIL_H

#include <check.h>

#include "kiln/kiln.h"

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

/* The largest |a[i] - b[i]| (a NaN is never taken). */
double kt_max_abs_diff(const float *a, const float *b, int64_t n);

/* A model's loss and every weight's gradient on the host, for comparing two batches: the n
 * weights' gradients are zeroed, loss(user) is built with grad on and run backward; out[0]
 * is the loss, then each weight's gradient in order (*n_out values in all; the caller frees
 * out). The step's activations are freed after. */
float *kt_loss_and_grads(kiln_ctx *ctx, kiln_tensor *const *weights, int n, kiln_tensor *(*loss)(void *user),
                         void *user, int64_t *n_out);

/* The NAME of --backend NAME in argv ("cpu" without one), which kt_backend() returns from
 * then on. kt_main calls it; a program that looks at the backend before kt_main may too. */
const char *kt_parse_backend(int argc, char **argv);

/* main() for a test program: parses --backend NAME, exits 77 (CTest "skipped") when that
 * backend is not available, builds a suite from `add_tests` (hand-written tests) plus one
 * loop test over `cases`, runs it and returns the failure count. */
int kt_main(int argc, char **argv, const char *suite_name, void (*add_tests)(Suite *s, TCase *tc),
            const kiln_verify_case *cases, int n_cases);
/* kt_main over the library's verification groups (a NULL-terminated list of names); a
 * group with gemm_variants runs each case once per GEMM variant of the device too. */
int kt_main_groups(int argc, char **argv, const char *suite_name, const char *const *groups,
                   void (*add_tests)(Suite *s, TCase *tc));
/* kt_main_groups over one group, which names the suite too. */
int kt_main_group(int argc, char **argv, const char *group, void (*add_tests)(Suite *s, TCase *tc));

/* For backend-specific test programs: 77 (CTest's "skipped") with the reason on stderr when
 * `backend` cannot be opened here, else 0. */
int kt_require_backend(const char *backend);
/* Runs the tests that `add_tests` puts into one TCase named `tcase_name`, with a timeout of
 * timeout_s seconds a test (0 keeps Check's default: 4 s, or CK_DEFAULT_TIMEOUT); returns 0
 * when all pass, 1 otherwise. */
int kt_run_tcase(const char *suite_name, const char *tcase_name, int timeout_s, void (*add_tests)(TCase *tc));
/* kt_run_tcase with a timeout of 600 s. */
int kt_run_tests(const char *suite_name, const char *tcase_name, void (*add_tests)(TCase *tc));
/* kt_run_tests with *ctx opened on `backend` for the tests to share (77 when the backend
 * cannot be opened here, 1 when the open fails after all), closed afterwards. */
int kt_run_tests_on(const char *backend, kiln_ctx **ctx, const char *suite_name, const char *tcase_name,
                    void (*add_tests)(TCase *tc));

#endif
