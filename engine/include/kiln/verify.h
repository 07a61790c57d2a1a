/* Checking a device's kernels against the CPU reference: the one table of op cases that
 * both `kiln verify` (users, on their own GPU) and the test suite (CI) run.
 *
 * A case builds an op's output from random inputs of given shapes. Verifying it on a device
 * runs it there and on the CPU backend from the same inputs, and compares the output and,
 * through a backward pass from sum(output * w) with a fixed random w, every input's
 * gradient. On the CPU backend itself, where there is nothing to compare against, the
 * gradients are checked against central finite differences instead. A case may name a
 * reference build (a fused op's unfused composition): the CPU side then runs that.
 * Every case with floating inputs runs a second time in f16 (mixed precision): its inputs
 * are rounded to f16 and built as f16 on the device, the reference runs in f32 on the same
 * rounded values, and the output and gradients (which must be f16 like their inputs) are
 * compared under the case's f16 tolerance.
 *
 * Errors are normalized: sum (a-b)^2 / sum a^2 over a tensor (NaN never passes). A case
 * passes when every comparison is within its tolerance. Adding a case to a group's table
 * (engine/verify/cases_*.c) adds it to `kiln verify` and to that group's test program. */
#ifndef KILN_VERIFY_H
#define KILN_VERIFY_H

#include "kiln/tensor.h"

#ifdef __cplusplus
extern "C" {
#ifdef __cplusplus
}
#endif

#endif

#define KILN_VERIFY_MAX_INPUTS 6

typedef enum kiln_verify_init {
    KILN_INIT_NORMAL = 0, /* normal with mean lo and std hi (hi 0 means 1) */
    KILN_INIT_UNIFORM,    /* uniform in [lo, hi) */
    KILN_INIT_AWAY0,      /* N(0, 1) pushed away from 0 by at least 0.1: for kinks (ReLU) */
    KILN_INIT_INT         /* i32 uniform in [lo, hi] (ids, targets, lengths) */
} kiln_verify_init;

/* Case tables use designated initializers; a field left out is zero, so an input written
 * {.dtype = KILN_F32, .ndim = 2, .shape = {7, 5}, .grad = 1} is drawn from N(0, 1). */
typedef struct kiln_verify_input {
    kiln_dtype dtype;
    int ndim;
    int64_t shape[KILN_MAX_DIMS];
    kiln_verify_init init;
    float lo, hi;
    int grad; /* 1: requires grad; its gradient is checked */
} kiln_verify_input;

/* Builds the output from the inputs (all on one context). May create further constant
 * tensors itself. Returns NULL with the error set on failure. */
typedef kiln_tensor *(*kiln_verify_build_fn)(kiln_tensor **in, const void *param);

typedef struct kiln_verify_case {
    const char *name;
    kiln_verify_build_fn build;
    /* NULL, or the same function computed another way (a fused op's composition of the
       unfused ops, or plain code): the CPU reference then runs this instead of build, so
       a device's build meets it, and on the CPU the build meets it besides the finite
       differences; both must take the same inputs and param */
    kiln_verify_build_fn reference;
    const void *param;
    int n_in;
    kiln_verify_input in[KILN_VERIFY_MAX_INPUTS];
    double fwd_tol; /* normalized error of the forward output vs CPU (0: 1e-10) */
    double bwd_tol; /* normalized error of each gradient (0: 1e-4 vs FD, 1e-8 vs CPU) */
    double fd_eps;  /* finite-difference step (0: 1e-2) */
    int no_grad;    /* the op is not differentiable: forward comparison only */
    double f16_tol; /* normalized error of the f16 run's output and gradients vs f32 on the
                       same rounded inputs (0: KILN_VERIFY_F16_TOL); loosen only with a comment why */
    int no_f16;     /* the case does not run in f16 (say why next to it) */
    int quick;      /* in `kiln verify --quick`, the check run on a device's first use */
} kiln_verify_case;

/* The default f16 tolerance: f16 keeps 11 significant bits, so one rounding of every
 * element leaves a normalized error near 2^-24 (6e-8), and a few roundings along a
 * forward and backward stay well below this. */
#define KILN_VERIFY_F16_TOL 1e-5

/* The cases of one op family: "norm", "matmul", "softmax", ... */
typedef struct kiln_verify_group {
    const char *name;
    const kiln_verify_case *cases;
    int count;
    int gemm_variants; /* 1: each case runs once per GEMM variant (kiln_gemm_variants) too */
} kiln_verify_group;

/* Every group, in the order `kiln verify` runs them; *count receives their number. */
const kiln_verify_group *const *kiln_verify_groups(int *count);
/* The group named `name`, or NULL. */
const kiln_verify_group *kiln_verify_group_find(const char *name);

typedef enum kiln_verify_precision {
    KILN_VERIFY_DECLARED = 0, /* inputs as the case declares them */
    KILN_VERIFY_F16           /* floating inputs rounded to f16 and built as f16 */
} kiln_verify_precision;

typedef enum kiln_verify_verdict { KILN_VERIFY_PASS = 0, KILN_VERIFY_FAIL, KILN_VERIFY_SKIP } kiln_verify_verdict;

/* What one run of a case found. Of all its comparisons (the forward output, each
 * gradient), the one closest to (or furthest past) its tolerance is reported. */
typedef struct kiln_verify_result {
    kiln_verify_verdict verdict;
    char against[24];      /* "cpu" or "finite differences"; "" when nothing was compared */
    char what[64];         /* "forward", "gradient 1", "grad h.0.ln_1.weight", ... */
    double error;          /* its normalized error */
    double tolerance;      /* and the tolerance it had */
    double max_abs;        /* its largest |a - b| */
    double max_rel;        /* max_abs over the reference's largest |a| */
    int64_t worst_index;   /* the element (flat index) with the largest |a - b| */
    int comparisons;       /* how many tensors were compared */
    char message[320];     /* why it failed, or why it was skipped; "" when it passed */
} kiln_verify_result;

/* Runs case `c` at precision `p` on `dev` against `ref` (a CPU context; on a CPU `dev`,
 * `ref` may be the same context or NULL: the gradients then meet finite differences). A
 * precision or input dtype the device cannot store gives KILN_VERIFY_SKIP, as does f16 for
 * a case without floating inputs or marked no_f16. Returns KILN_OK when the case ran (its
 * verdict is in *r), or the error that kept it from running (e.g. out of memory). */
kiln_status kiln_verify_run(kiln_ctx *dev, kiln_ctx *ref, const kiln_verify_case *c, kiln_verify_precision p,
                            kiln_verify_result *r);

/* The GEMM kernels of the device that can be forced one at a time, so that the kernels a
 * device does not pick by default (for the shapes at hand) get checked too: their names
 * into names[0..cap), and their count (0 when the backend has a single GEMM path, as the
 * CPU backend, the reference). */
int kiln_gemm_variants(kiln_ctx *ctx, const char **names, int cap);
/* Forces the GEMM variant `name` for the context's later products, where the variant can
 * run the product (else the backend chooses as usual); NULL or "": the backend's own choice. */
kiln_status kiln_set_gemm_variant(kiln_ctx *ctx, const char *name);

/* 1 when the case has an f16 run: it has floating inputs and is not marked no_f16. */
int kiln_verify_has_f16_form(const kiln_verify_case *c);

/* The normalized error of b against a (n values each): sum (a-b)^2 / sum a^2, with a floor
 * of 1e-30 on the denominator; infinite when a NaN appears or an infinity differs. */
double kiln_verify_normalized_error(const float *a, const float *b, int64_t n);

/* One comparison of a run: b (under test) against a (the reference, n values each) under
 * tolerance tol, named `what` ("forward", "gradient 1", "loss", ...). Records it in r when it
 * is the closest yet to its tolerance, and fails r (message naming `what` and r->against)
 * when it is past it. Returns 1 when it passed. For checks beyond the table (whole models,
 * in the kiln program): start from a zeroed result with verdict PASS and `against` set. */
int kiln_verify_compare(kiln_verify_result *r, const char *what, const float *a, const float *b, int64_t n,
                        double tol);

/* The shapes of a case's inputs, as "[2,5,13] [13] i32[4]", into buf. */
void kiln_verify_shapes(const kiln_verify_case *c, char *buf, size_t size);

#ifdef __cplusplus
}
#endif

#endif
