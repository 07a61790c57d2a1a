/* The `kiln bench` commands (bench/CMakeLists.txt compiles them into the kiln program):
 *
 *   kiln bench            every device's ceilings, kernel classes, whole-model figures and
 *                         decoding per weight format, each as a fraction of the ceiling the
 *                         same run measured (bench_run.c; the parts in bench_ceilings.c,
 *                         bench_kernels.c, bench_model.c, bench_decode.c; the table in
 *                         bench_report.c; JSON in bench_json.c)
 *   kiln bench decode     its decode section alone (bench_decode.c)
 *   kiln bench compare    result files of several runs side by side (bench_compare.c)
 *   kiln bench gemm       f32 GEMM against OpenBLAS and CLBlast (bench_gemm.c)
 *   kiln bench train      training tokens/s of kiln and PyTorch (bench_train.c); with
 *                         --lora, full fine-tuning against LoRA (bench_lora.c)
 *   kiln bench precision  fp16 against fp32 training on one device (bench_precision.c)
 *   kiln bench attention  fused against unfused attention: peak memory and step time over
 *                         context lengths (bench_attention.c)
 *
 * A run's results are a list of figures per device. A figure has a stable key
 * ("gemm.f32.nn") that `compare` matches across files, a label and a shape for people, and
 * the median and spread of its timed repeats. */
#ifndef KILN_HOST_BENCH_BENCH_H
#define KILN_HOST_BENCH_BENCH_H

#include <stdio.h>

#include "kiln/kiln.h"
#include "kiln/probe.h"
#include "model/gpt/gpt.h"
#include "model/gpt/gpt_quant_mix.h"

/* ---- the commands (each returns the process exit code) ---- */

/* `kiln bench train`: training tokens/s of kiln and PyTorch (bench_train.c), and `kiln bench
 * precision`: fp16 against fp32 training memory and step time (bench_precision.c). Both
 * take main's argc/argv: their options start at argv[3]. */
int cmd_bench_train(int argc, char **argv);
/* `kiln bench train --lora` (cmd_bench_train hands it over): full fine-tuning against LoRA,
 * memory and step time, and PyTorch's LoRA step (bench_lora.c). */
int cmd_bench_lora(int argc, char **argv);
int cmd_bench_precision(int argc, char **argv);
/* `kiln bench attention` (bench_attention.c): main's argc/argv, its options from argv[3]. */
int cmd_bench_attention(int argc, char **argv);
/* argv[0] is "gemm"; the options follow. Returns the process exit code. */
int kiln_bench_gemm_main(int argc, char **argv);
/* main's argc/argv for `kiln bench [options]`: the options start at argv[2]. Returns the
 * process exit code. */
int kiln_bench_main(int argc, char **argv);
/* argv[0] is "compare"; the result files follow. Returns the process exit code. */
int kiln_bench_compare_main(int argc, char **argv);

/* The schema name every result file carries; compare refuses files without it. */
#define BENCH_SCHEMA "kiln-bench/1"

/* What a figure's median measures, which decides how it is printed and whether higher is
 * better. */
typedef enum bench_unit {
    BENCH_GFLOPS,     /* GFLOP/s */
    BENCH_GBPS,       /* GB/s */
    BENCH_US,         /* microseconds (latency) */
    BENCH_MS,         /* milliseconds (latency) */
    BENCH_TOKENS_PER_S,
    BENCH_MIB         /* memory, MiB (lower is better; not timed) */
} bench_unit;

/* The sections of a device's results, in the order they are printed. */
typedef enum bench_section {
    BENCH_CEILINGS = 0,
    BENCH_KERNELS,
    BENCH_MODELS,
    BENCH_DECODE,
    BENCH_SECTIONS
} bench_section;

/* "ceilings", "kernels", "models", "decode": the table's headings and the JSON's names. */
const char *bench_section_name(bench_section section);

typedef struct bench_figure {
    char key[48];      /* stable across runs and machines: "gemm.f16.nt", "tiny.train.tokens" */
    char label[64];    /* "GEMM f16->f32 NT" */
    char shape[64];    /* the size measured, which may differ between devices: "1024x768x3072" */
    bench_section section;
    bench_unit unit;
    double median, min, max; /* of the rate (or latency) over the repeats; NAN: not measured */
    double device_s, wall_s; /* median device and wall time of one run; NAN: none */
    int repeats;
    char ceiling[24];  /* key of the ceiling the figure is a fraction of ("" for none) */
    double pct;        /* median as a percentage of that ceiling; NAN: none */
    char note[200];    /* why it was not measured ("n/a: ..."), or what is wrong with it */
    int error;         /* a failure or an impossible result: the run exits non-zero */
} bench_figure;

/* One device's results. */
typedef struct bench_device {
    char id[32];       /* "cpu:0", "vulkan:1" */
    char backend[16];
    char name[256];
    char driver[256];
    double load_start, load_end; /* the machine's 1-minute load average around the run */
    double seconds;              /* wall time the device's run took */
    int fma_width[2];            /* the width of the best FMA figure, f32 and f16 (0: none) */
    bench_figure *figs;
    int n_figs, cap_figs;
} bench_device;

/* A run: the devices and what produced it. */
typedef struct bench_run {
    char created[32];  /* UTC, ISO 8601 */
    char command[512];
    char host[128];
    int cpus;
    bench_device *devices;
    int n_devices;
} bench_run;

/* The named model sizes of the models and decode sections (bench_model.c). */
enum { BENCH_TINY, BENCH_GPT2_SMALL, BENCH_SMOLLM2_135M, BENCH_MODEL_SIZES };

/* The options of `kiln bench`. */
typedef struct bench_options {
    int repeat;       /* timed repeats of ceilings and kernels */
    int quick;        /* small sizes, few repeats, tiny model only: a smoke run */
    int ceilings, kernels, models; /* sections to run (from --only) */
    int sizes[BENCH_MODEL_SIZES];  /* the named model sizes to run (from --models) */
    int fp32, fp16;                /* model precisions to run (from --precision) */
    int decode;                    /* the decode section (from --only) */
    int formats[GPT_QUANT_TYPE_COUNT]; /* decode's weight formats, gpt_quant_type_at's (from --formats) */
    int prompt, tokens;            /* decode's prompt length and tokens decoded per timed run */
    const char *ckpt;              /* decode: a GPT checkpoint to run instead of the named sizes */
} bench_options;

/* ---- figures (bench_run.c) ---- */

/* Appends a figure (zeroed, every number NAN) and returns it, or NULL out of memory. */
bench_figure *bench_add(bench_device *d, bench_section section, const char *key,
                        const char *label, bench_unit unit);
/* The figure with this key, or NULL. */
const bench_figure *bench_find(const bench_device *d, const char *key);
/* Marks f as not measured, with the engine's (or a given) reason. `error` distinguishes a
 * failure from a device that lacks the feature or the memory (not an error of the run). */
void bench_not_measured(bench_figure *f, int error, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* A ceiling is what the device can do at best: its best run (max), not its median, which
 * drops with every run another process interrupts on a shared machine. */
double bench_ceiling_value(const bench_figure *ceiling);
/* Sets f's percentage (of its median) of the ceiling figure `ceiling_key` of the same device
 * (left NAN when that ceiling was not measured). */
void bench_relate(bench_device *d, bench_figure *f, const char *ceiling_key);
const char *bench_unit_name(bench_unit unit);
/* 1 for latencies (lower is better). */
int bench_unit_is_time(bench_unit unit);

/* ---- timing engine work (bench_run.c) ----
 * One measured piece of work. `prepare` (untimed, may be NULL) records what the timed part
 * consumes, and the device finishes it before timing starts; `run` records the timed work
 * between kiln_timer_begin and kiln_timer_end. Both return 0, or -1 with the engine's error
 * message set. `check` (untimed, may be NULL) runs after the first timed run, before the
 * step's tensors are freed, and refuses a wrong result: -1 with a reason in err. */
typedef struct bench_work {
    int (*prepare)(void *arg);
    int (*run)(void *arg);
    int (*check)(void *arg, char *err, size_t errlen);
    void *arg;
    double amount; /* per run: FLOPs, bytes or tokens (the rate is amount / time) */
} bench_work;

/* Warm-up runs, then `repeats` timed runs; fills f's median, spread, device and wall time.
 * The rate is amount / device time in f's unit (GFLOP/s, GB/s, tokens/s), or for a latency
 * unit the time of one run divided by `amount` (per token). Returns 0, or -1 after marking
 * f as not measured with the engine's reason. */
int bench_time(kiln_ctx *ctx, const bench_work *w, int warmup, int repeats, bench_figure *f);

/* A bench_work check for a model's logits: 0 when their first value reads back finite, else
 * -1 with the reason in err. */
int bench_check_logits(const kiln_tensor *logits, char *err, size_t errlen);

/* Fills f from a probe's measure (rates already in f's unit). */
void bench_from_measure(bench_figure *f, const kiln_measure *m);
/* The status of a failed call as a not-measured figure: UNSUPPORTED and MEMORY are what the
 * device lacks (n/a), anything else is an error. */
void bench_engine_failure(bench_figure *f, const char *what);

/* Inputs: n values uniform in [lo, hi) from `stream` (cheap, deterministic); a persistent
 * tensor of them (f32 or f16), with its values kept in *host (malloc'ed; f16-rounded for
 * f16) when host is not NULL. NULL on failure (engine message, or out of host memory). */
void bench_fill_uniform(float *x, int64_t n, uint64_t stream, float lo, float hi);
kiln_tensor *bench_uniform_tensor(kiln_ctx *ctx, kiln_dtype dtype, int ndim, const int64_t *shape, uint64_t stream,
                                  float lo, float hi, float **host);

/* Median of v[0..n) (sorts v); NAN for n < 1. */
double bench_median(double *v, int n);
/* Pauses 0.3 s: the worker threads a library leaves spinning after a call (OpenBLAS's,
 * CLBlast's, OpenMP's) fall asleep before the next measurement, instead of sharing its
 * cores. */
void bench_settle(void);

/* ---- the parts of a device's run ---- */

/* Ceilings: FMA f32/f16 at each width, copy, transfers, dispatch latency; and the host's
 * OpenBLAS sgemm as a fraction of the f32 ceiling (bench_ceilings.c). */
void bench_ceilings(kiln_ctx *ctx, const bench_options *o, bench_device *d);
/* Kernel classes at transformer sizes (bench_kernels.c). */
void bench_kernels(kiln_ctx *ctx, const bench_options *o, bench_device *d);
/* Whole models: training step and decoding (bench_model.c). */
void bench_models(kiln_ctx *ctx, const bench_options *o, bench_device *d);
/* Single-stream decoding and prefill at each weight format, with the bytes a token reads
 * against the copy bandwidth and the memory each format needs (bench_decode.c). */
void bench_decode(kiln_ctx *ctx, const bench_options *o, bench_device *d);
/* --ckpt read once on the cpu backend before any device runs, so that a file kiln cannot load
 * is one error line, not a failed row for every format of every device; 0, or 1 with the
 * line printed (bench_decode.c). */
int bench_decode_check_ckpt(const char *path);
/* The copy-bandwidth ceiling alone, when the ceilings section did not run (bench_ceilings.c). */
void bench_copy_ceiling(kiln_ctx *ctx, const bench_options *o, bench_device *d);
/* A named model size (BENCH_TINY...): its name ("tiny", "gpt2-small", "smollm2-135m") and
 * its config (bench_model.c). */
const char *bench_model_name(int size);
const gpt_config *bench_model_config(int size);

/* Relates a compute-bound figure (a GEMM, a model's FLOP/s) to the FMA ceiling `ceiling_key`
 * ("fma.f32" or "fma.f16"). Above 100% is impossible, unless the ceiling's runs were all
 * interrupted (a loaded machine): the ceiling is measured again with more runs, and if the
 * figure still exceeds it, the figure is marked an error when `error_above` is set (the
 * ceiling kernel is wrong) or noted otherwise (bench_ceilings.c). */
void bench_relate_compute(kiln_ctx *ctx, const bench_options *o, bench_device *d, bench_figure *f,
                          const char *ceiling_key, int error_above);

/* The FMA ceiling a matrix product with operands of `dtype` is measured against: "fma.f32"
 * for f32; for f16 (f16 operands, f32 accumulation), the faster of f16 and f32 FMA, since a
 * device may multiply f16 with f16 arithmetic (tensor cores) or by widening to f32
 * (bench_kernels.c). */
const char *bench_matmul_ceiling(const bench_device *d, kiln_dtype dtype);

/* The M of the GEMM figures (and of the OpenBLAS cross-check): ~20 ms at the f32 ceiling
 * (~0.5 ms in a --quick run). */
int bench_gemm_m(const bench_device *d, const bench_options *o);
/* GEMM rows M for a [M, 768] x [768, 3072] product that takes about `target_s` at the
 * device's f32 ceiling, a power of two within [lo, hi] (bench_kernels.c). */
int bench_gemm_rows(const bench_device *d, double target_s, int lo, int hi);

/* ---- output ---- */

/* The readable table (bench_report.c), printed as the run goes: a device's header line, a
 * section's column heading, one figure's row. */
void bench_print_device(FILE *out, const bench_device *d);
void bench_print_section(FILE *out, bench_section section);
void bench_print_figure(FILE *out, const bench_figure *f);
/* "kiln bench: <device id>: <what>" on stderr: which part of a device's run starts. */
void bench_say(const bench_device *d, const char *what);
/* A value in about four significant digits ("-" when not a number). */
void bench_format_value(double v, char *buf, size_t size);
/* Writes the run as JSON to path, atomically (kiln/file.h). Returns 0, or 1 after printing
 * an error (bench_json.c). */
int bench_write_json(const bench_run *run, const char *path);
/* Checks that bench_write_json will be able to create its temporary file beside path.
 * Returns 0, or 1 after printing an error. */
int bench_check_json_path(const char *path);

#endif
