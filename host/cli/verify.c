/* `kiln verify`: every op of the engine, forward and backward, in f32 and f16, on the chosen
 * device against the CPU reference (the library's case table, kiln/verify.h), one line per
 * run and a summary; non-zero exit when any run fails. `--json FILE` writes the same runs
 * for tooling (schema "kiln-verify/1"). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "model/verify_suite.h"
#include "formats/json.h"
#include "kiln/file.h"
#include "kiln/probe.h"
#include "run/cli.h"
#include "run/device.h"

static const char *verdict_name(kiln_verify_verdict v) {
    return v == KILN_VERIFY_PASS ? "pass" : v == KILN_VERIFY_FAIL ? "FAIL" : "skip";
}

typedef struct verify_output {
    kiln_file *file; /* --json, written whole (kiln/file.h); NULL without it */
    FILE *json;      /* its stream */
    int runs;        /* runs written to json so far */
    char err[4400];  /* why the --json file could not be written */
} verify_output;

static void print_run(const verify_run_info *run, void *user) {
    verify_output *out = user;
    const kiln_verify_result *r = &run->result;
    char name[96], precision[32];
    const char *shapes = run->shapes;
    snprintf(name, sizeof name, "%s/%s", run->group, run->name);
    snprintf(precision, sizeof precision, "%s%s%s", verify_precision_name(run->precision),
             run->gemm_variant ? " gemm " : "", run->gemm_variant ? run->gemm_variant : "");
    if (r->verdict == KILN_VERIFY_SKIP || !r->comparisons) {
        printf("%-4s  %-40s %-18s %s  (%s)\n", verdict_name(r->verdict), name, precision, shapes,
               r->message[0] ? r->message : "nothing to compare on this device");
    } else {
        printf("%-4s  %-40s %-18s %-10s vs %-4s  max abs %.2e  max rel %.2e  at [%lld]  error %.2e (tol %.0e)  %s\n",
               verdict_name(r->verdict), name, precision, r->what, !strcmp(r->against, "cpu") ? "cpu" : "fd",
               r->max_abs, r->max_rel, (long long)r->worst_index, r->error, r->tolerance, shapes);
        if (r->verdict == KILN_VERIFY_FAIL) printf("      %s\n", r->message);
    }
    fflush(stdout);
    if (!out->json) return;
    FILE *f = out->json;
    fprintf(f, "%s\n    {\"group\": ", out->runs++ ? "," : "");
    json_write_string(f, run->group);
    fputs(", \"case\": ", f);
    json_write_string(f, run->name);
    fprintf(f, ", \"precision\": \"%s\", \"gemm_variant\": ", verify_precision_name(run->precision));
    json_write_string(f, run->gemm_variant ? run->gemm_variant : "");
    fprintf(f, ", \"verdict\": \"%s\", \"shapes\": ",
            r->verdict == KILN_VERIFY_PASS ? "pass" : r->verdict == KILN_VERIFY_FAIL ? "fail" : "skip");
    json_write_string(f, shapes);
    fputs(", \"against\": ", f);
    json_write_string(f, r->against);
    fputs(", \"worst\": ", f);
    json_write_string(f, r->what);
    /* non-finite errors (a NaN output) are null: JSON has no NaN */
    const double numbers[4] = {r->error, r->tolerance, r->max_abs, r->max_rel};
    const char *keys[4] = {"error", "tolerance", "max_abs", "max_rel"};
    for (int i = 0; i < 4; i++) {
        if (r->comparisons && isfinite(numbers[i])) fprintf(f, ", \"%s\": %.6g", keys[i], numbers[i]);
        else fprintf(f, ", \"%s\": null", keys[i]);
    }
    fprintf(f, ", \"worst_index\": %lld, \"seconds\": %.4f, \"message\": ", (long long)r->worst_index, run->seconds);
    json_write_string(f, r->message);
    fputc('}', f);
}

static void print_listed(const char *group, const char *name, const char *shapes, int f16, int quick, void *user) {
    (void)user;
    char full[96];
    snprintf(full, sizeof full, "%s/%s", group, name);
    printf("%-44s %s%s%s\n", full, f16 ? "f32 f16  " : "f32      ", quick ? "quick  " : "       ", shapes);
}

typedef struct verify_args {
    const char *backend, *json_path, *only;
    int device, quick, list;
} verify_args;

/* Parses the options into *a: 0 to go on, else the exit code (--help: 0 after the usage). */
static int parse_options(int argc, char **argv, verify_args *a, int *exit_code) {
    *a = (verify_args){.backend = "auto", .device = -1};
    cli_opt opts[] = {
        host_backend_option(&a->backend),
        host_device_option(&a->device),
        {.name = "--quick", .kind = CLI_FLAG, .target = &a->quick,
         .help = "only the quick subset (a few cases per op; what train/eval/decode run on a device's first use)"},
        {.name = "--only", .kind = CLI_STRING, .target = &a->only, .meta = "GROUP[/CASE]",
         .help = "only one group of ops (e.g. norm) or one case (norm/layernorm_wb); see --list"},
        {.name = "--list", .kind = CLI_FLAG, .target = &a->list, .help = "list the groups and cases, run nothing"},
        {.name = "--json", .kind = CLI_STRING, .target = &a->json_path, .meta = "FILE",
         .help = "also write every run as JSON (schema kiln-verify/1)"},
    };
    const char *summary =
        "Checks every op of the engine, forward and backward, in f32 and in f16 (matrix products\n"
        "in every GEMM variant the device has), and a small GPT's training step and greedy\n"
        "decode, on a device against the CPU reference, with the tolerances of kiln's test\n"
        "suite (docs/verify.md): one line per run (verdict, case, precision, the worst of its\n"
        "comparisons: max abs and max rel error, the worst element's index, the normalized\n"
        "error and its tolerance, the input shapes), then a summary. Exits non-zero when any\n"
        "run fails. On the CPU backend the gradients are checked against finite differences.\n"
        "Run it first on a new device or driver.";
    int rc = cli_parse("verify", summary, argc, argv, 2, opts, (int)(sizeof opts / sizeof opts[0]));
    *exit_code = rc < 0 ? 1 : 0;
    return rc != 0;
}

static void close_devices(kiln_ctx *dev, kiln_ctx *cpu) {
    if (cpu != dev) kiln_close(cpu);
    kiln_close(dev);
}

/* The device under test and the CPU reference (the same context when the device is the
 * CPU), and the --json file; 0, or the exit code after one line printed. */
static int open_run(const verify_args *a, kiln_ctx **dev, kiln_ctx **cpu, verify_output *out) {
    if (!(*dev = host_open_device(a->backend, a->device))) return 1;
    *cpu = *dev;
    if (strcmp(kiln_backend_name(*dev), "cpu") && kiln_open("cpu", cpu) != KILN_OK) {
        kiln_close(*dev);
        return host_engine_error("the CPU reference");
    }
    if (a->json_path && !(out->file = kiln_file_begin(a->json_path, out->err, sizeof out->err))) {
        close_devices(*dev, *cpu);
        return host_error("--json %s", out->err);
    }
    out->json = out->file ? kiln_file_stream(out->file) : NULL;
    return 0;
}

/* The first line (and the JSON's head): which device, against what. */
static void print_header(kiln_ctx *dev, kiln_ctx *cpu, int quick, verify_output *out) {
    host_say_device("verify", dev);
    const char *driver = kiln_device_driver(dev);
    printf("kiln verify %s: %s device %s%s%s, against %s\n", KILN_VERSION_STRING, kiln_backend_name(dev),
           kiln_device_name(dev), driver[0] ? ", driver " : "", driver,
           cpu == dev ? "finite differences (the CPU is the reference)" : "the cpu backend");
    if (!out->json) return;
    fputs("{\"schema\": \"kiln-verify/1\", \"kiln_version\": \"" KILN_VERSION_STRING "\", \"backend\": ", out->json);
    json_write_string(out->json, kiln_backend_name(dev));
    fputs(", \"device\": ", out->json);
    json_write_string(out->json, kiln_device_name(dev));
    fputs(", \"driver\": ", out->json);
    json_write_string(out->json, driver);
    fprintf(out->json, ", \"quick\": %s,\n  \"runs\": [", quick ? "true" : "false");
}

/* The summary line (and the JSON's tail, closing the file); 1 when writing the JSON failed. */
static int print_summary(kiln_ctx *dev, const verify_totals *t, kiln_status st, const char *stopped,
                         verify_output *out) {
    printf("kiln verify: %s %s: %d runs, %d passed, %d failed, %d skipped, %.1f s%s\n", kiln_backend_name(dev),
           kiln_device_name(dev), t->passed + t->failed + t->skipped, t->passed, t->failed, t->skipped, t->seconds,
           st != KILN_OK ? " (stopped early)" : "");
    if (!out->json) return 0;
    fprintf(out->json, "\n  ],\n  \"passed\": %d, \"failed\": %d, \"skipped\": %d, \"seconds\": %.3f, \"stopped\": ",
            t->passed, t->failed, t->skipped, t->seconds);
    json_write_string(out->json, stopped);
    fputs("}\n", out->json);
    return kiln_file_commit(out->file, out->err, sizeof out->err) != KILN_OK;
}

int cmd_verify(int argc, char **argv) {
    verify_args a;
    int rc;
    if (parse_options(argc, argv, &a, &rc)) return rc;
    if (a.only && !verify_filter_known(a.only))
        return host_error("--only %s: no such group or case (kiln verify --list shows them)", a.only);
    verify_selection sel = {.quick = a.quick, .filter = a.only};
    if (a.list) {
        verify_suite_list(&sel, print_listed, NULL);
        return 0;
    }
    kiln_ctx *dev, *cpu;
    verify_output out = {0};
    if ((rc = open_run(&a, &dev, &cpu, &out))) return rc;
    print_header(dev, cpu, a.quick, &out);
    verify_totals t;
    kiln_status st = verify_suite_run(dev, cpu, &sel, print_run, &out, &t);
    char stopped[400] = "";
    if (st != KILN_OK) snprintf(stopped, sizeof stopped, "%s", kiln_error_message());
    int write_failed = print_summary(dev, &t, st, stopped, &out);
    close_devices(dev, cpu);
    if (st != KILN_OK) return host_error("verify: %s", stopped);
    if (write_failed) return host_error("--json %s", out.err);
    if (t.failed)
        return host_error("verify: %d of %d runs failed; first: %s", t.failed, t.passed + t.failed + t.skipped,
                          t.first_failure);
    return 0;
}
