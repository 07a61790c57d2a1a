/* Running the library's verification cases (kiln/verify.h) and the whole-model checks
 * (model/verify_model.h) on a device: every group, case and precision, or the --quick
 * subset, or the cases one filter names. `kiln verify` (cli/verify.c) prints
 * what it finds; train, eval and decode run the quick subset on a device's first use
 * (cli/device_check.h). */
#ifndef KILN_HOST_MODEL_VERIFY_SUITE_H
#define KILN_HOST_MODEL_VERIFY_SUITE_H

#include "kiln/kiln.h"

/* One run of one case, as the suite reports it. */
typedef struct verify_run_info {
    const char *group, *name; /* "norm", "layernorm_wb"; "gpt", "train_step" */
    char shapes[160];         /* the inputs' shapes, or what the model check runs */
    kiln_verify_precision precision;
    const char *gemm_variant; /* the GEMM variant forced for the run, or NULL */
    kiln_verify_result result;
    double seconds;
} verify_run_info;

typedef void (*verify_report_fn)(const verify_run_info *run, void *user);

typedef struct verify_totals {
    int passed, failed, skipped;
    double seconds;
    char first_failure[512]; /* "group/case (f16, gemm tiled): ..." of the first failed run */
} verify_totals;

typedef struct verify_selection {
    int quick;          /* only the cases marked quick */
    const char *filter; /* NULL, a group ("norm"), or one case ("norm/layernorm_wb", "gpt/train_step") */
} verify_selection;

/* 1 when `filter` names a group or a case (for a clear error up front). */
int verify_filter_known(const char *filter);

/* Calls fn for every case that `sel` selects (its group, name, shapes, whether it has an f16
 * run and whether it is quick): `kiln verify --list`. */
void verify_suite_list(const verify_selection *sel,
                       void (*fn)(const char *group, const char *name, const char *shapes, int f16, int quick,
                                  void *user),
                       void *user);

/* Runs the selected cases on `dev` against `cpu` (the same context when dev is the CPU),
 * each in its declared precision and then in f16 (and, in a group that asks for it, once
 * more per GEMM variant of the device), calling `report` after each run. Returns
 * KILN_OK when every run ran (their verdicts are in *totals), or the error that stopped one
 * (device lost, out of memory), with the engine's message naming the case. */
kiln_status verify_suite_run(kiln_ctx *dev, kiln_ctx *cpu, const verify_selection *sel, verify_report_fn report,
                             void *user, verify_totals *totals);

/* "f32" for the declared precision, "f16" for the f16 run. */
const char *verify_precision_name(kiln_verify_precision p);
/* How a run is named in messages: "norm/layernorm_wb (f16)", "matmul/matmul_nt (f32, gemm packed)". */
void verify_run_name(const verify_run_info *run, char *buf, size_t size);

#endif
