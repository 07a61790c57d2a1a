/* `kiln bench`: every device's ceilings, its kernel classes as fractions of those ceilings,
 * and whole-model figures, in one run (see bench.h for the parts).
 *
 * Devices run one after the other, each in a context of its own that is closed before the
 * next opens, so no device's threads (OpenMP, lavapipe's, PoCL's) compete with another's
 * measurement. Each figure is printed as soon as it is measured; a figure that cannot be
 * measured says why on its row and the run goes on. The exit code is non-zero when a
 * figure failed or is impossible (a GEMM above its FMA ceiling). */
#define _DEFAULT_SOURCE /* getloadavg, gethostname */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench.h"
#include "run/cli.h"
#include "run/progress.h"

/* ---- figures ---- */

bench_figure *bench_add(bench_device *d, bench_section section, const char *key,
                        const char *label, bench_unit unit) {
    if (d->n_figs == d->cap_figs) {
        int cap = d->cap_figs ? 2 * d->cap_figs : 64;
        bench_figure *f = realloc(d->figs, (size_t)cap * sizeof *f);
        if (!f) return NULL;
        d->figs = f;
        d->cap_figs = cap;
    }
    bench_figure *f = &d->figs[d->n_figs++];
    memset(f, 0, sizeof *f);
    snprintf(f->key, sizeof f->key, "%s", key);
    snprintf(f->label, sizeof f->label, "%s", label);
    f->section = section;
    f->unit = unit;
    f->median = f->min = f->max = f->device_s = f->wall_s = f->pct = NAN;
    return f;
}

const bench_figure *bench_find(const bench_device *d, const char *key) {
    for (int i = 0; i < d->n_figs; i++)
        if (!strcmp(d->figs[i].key, key)) return &d->figs[i];
    return NULL;
}

void bench_not_measured(bench_figure *f, int error, const char *fmt, ...) {
    char msg[sizeof f->note - 8]; /* room for the prefix */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    for (char *p = msg; *p; p++)
        if (*p == '\n') *p = ' ';
    snprintf(f->note, sizeof f->note, "%s%s", error ? "error: " : "n/a: ", msg);
    f->error = error;
    f->median = f->min = f->max = f->pct = NAN;
}

void bench_engine_failure(bench_figure *f, const char *what) {
    kiln_status s = kiln_error_status();
    const char *msg = kiln_error_message();
    /* What the device lacks (f16 arithmetic, memory for the model) is a property of the
     * device, not a failure of the run. */
    int error = !(s == KILN_ERR_UNSUPPORTED || s == KILN_ERR_MEMORY);
    bench_not_measured(f, error, "%s: %s", what, msg && *msg ? msg : "unknown engine error");
    kiln_clear_error();
}

double bench_ceiling_value(const bench_figure *c) {
    if (!c) return NAN;
    return isfinite(c->max) ? c->max : c->median;
}

void bench_relate(bench_device *d, bench_figure *f, const char *ceiling_key) {
    double c = bench_ceiling_value(bench_find(d, ceiling_key));
    snprintf(f->ceiling, sizeof f->ceiling, "%s", ceiling_key);
    if (isfinite(c) && c > 0 && isfinite(f->median)) f->pct = 100.0 * f->median / c;
}

const char *bench_unit_name(bench_unit unit) {
    switch (unit) {
    case BENCH_GFLOPS: return "GFLOP/s";
    case BENCH_GBPS: return "GB/s";
    case BENCH_US: return "us";
    case BENCH_MS: return "ms";
    case BENCH_TOKENS_PER_S: return "tokens/s";
    case BENCH_MIB: return "MiB";
    }
    return "?";
}

int bench_unit_is_time(bench_unit unit) { return unit == BENCH_US || unit == BENCH_MS; }

const char *bench_section_name(bench_section section) {
    static const char *const names[BENCH_SECTIONS] = {"ceilings", "kernels", "models", "decode"};
    return section >= 0 && section < BENCH_SECTIONS ? names[section] : "?";
}

static int ascending(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double bench_median(double *v, int n) {
    if (n <= 0) return NAN;
    qsort(v, (size_t)n, sizeof *v, ascending);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

void bench_settle(void) {
    struct timespec ts = {.tv_sec = 0, .tv_nsec = 300 * 1000 * 1000};
    nanosleep(&ts, NULL);
}

void bench_from_measure(bench_figure *f, const kiln_measure *m) {
    f->median = m->median;
    f->min = m->min;
    f->max = m->max;
    f->device_s = m->device_s;
    f->wall_s = m->wall_s;
    f->repeats = m->repeats;
}

/* ---- inputs ---- */

void bench_fill_uniform(float *x, int64_t n, uint64_t stream, float lo, float hi) {
    /* splitmix64: a few operations per value, so a debug build fills 100M-element inputs
     * in seconds (the engine's Philox is for reproducible training, not for this) */
    uint64_t state = stream * 0x9E3779B97F4A7C15ull;
    for (int64_t i = 0; i < n; i++) {
        uint64_t z = (state += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        z ^= z >> 31;
        x[i] = lo + (hi - lo) * (float)((z >> 40) * 0x1p-24);
    }
}

kiln_tensor *bench_uniform_tensor(kiln_ctx *ctx, kiln_dtype dtype, int ndim, const int64_t *shape, uint64_t stream,
                                  float lo, float hi, float **host) {
    kiln_tensor *t = kiln_tensor_new(ctx, dtype, ndim, shape);
    if (!t) return NULL;
    const int64_t n = kiln_numel(t);
    float *h = malloc((size_t)n * sizeof *h);
    if (!h) {
        kiln_tensor_free(t);
        return NULL;
    }
    bench_fill_uniform(h, n, stream, lo, hi);
    /* the host copy holds what the device holds */
    if (dtype == KILN_F16)
        for (int64_t i = 0; i < n; i++) h[i] = kiln_f16_to_f32(kiln_f32_to_f16(h[i]));
    if (kiln_upload_f32(t, h, n)) {
        kiln_tensor_free(t);
        free(h);
        return NULL;
    }
    if (host)
        *host = h;
    else
        free(h);
    return t;
}

/* ---- timing engine work ---- */

int bench_check_logits(const kiln_tensor *logits, char *err, size_t errlen) {
    float v;
    if (kiln_read_scalar(logits, &v)) return snprintf(err, errlen, "reading the logits: %s", kiln_error_message()), -1;
    if (!isfinite(v)) return snprintf(err, errlen, "the logits are not finite (%g)", (double)v), -1;
    return 0;
}

/* The figure's value for one run of `secs` doing `amount`. */
static double value_of(bench_unit unit, double amount, double secs) {
    switch (unit) {
    case BENCH_GFLOPS:
    case BENCH_GBPS: return amount / secs * 1e-9;
    case BENCH_TOKENS_PER_S: return amount / secs;
    case BENCH_US: return secs / amount * 1e6;
    case BENCH_MS: return secs / amount * 1e3;
    case BENCH_MIB: break; /* not a timed figure */
    }
    return NAN;
}

int bench_time(kiln_ctx *ctx, const bench_work *w, int warmup, int repeats, bench_figure *f) {
    double *dev = calloc((size_t)repeats, sizeof *dev), *wall = calloc((size_t)repeats, sizeof *wall);
    double *val = calloc((size_t)repeats, sizeof *val);
    char why[256] = "";
    if (!dev || !wall || !val) {
        snprintf(why, sizeof why, "out of host memory");
        goto fail;
    }
    for (int r = -warmup; r < repeats; r++) {
        if (w->prepare && (w->prepare(w->arg) || kiln_sync(ctx))) {
            snprintf(why, sizeof why, "setting up");
            goto fail;
        }
        if (kiln_timer_begin(ctx)) {
            snprintf(why, sizeof why, "starting the timer");
            goto fail;
        }
        int rc = w->run(w->arg);
        /* The timer is ended even after a failed run (it does not nest); the run's own
         * message is the one worth keeping. */
        char run_msg[256];
        kiln_status run_status = kiln_error_status();
        snprintf(run_msg, sizeof run_msg, "%s", kiln_error_message());
        double ds = 0, ws = 0;
        kiln_status te = kiln_timer_end(ctx, &ds, &ws);
        if (rc) {
            kiln_clear_error();
            bench_not_measured(f, !(run_status == KILN_ERR_UNSUPPORTED || run_status == KILN_ERR_MEMORY),
                               "%s", run_msg[0] ? run_msg : "the run failed");
            goto out;
        }
        if (te) {
            snprintf(why, sizeof why, "reading the timer");
            goto fail;
        }
        if (r == 0 && w->check && w->check(w->arg, why, sizeof why)) {
            bench_not_measured(f, 1, "%s", why);
            goto out;
        }
        kiln_step_reset(ctx);
        if (r >= 0) {
            dev[r] = ds;
            wall[r] = ws;
            /* Device time where the backend measures it; a backend that reports none (0)
             * is timed by the wall clock. */
            val[r] = value_of(f->unit, w->amount, ds > 0 ? ds : ws);
        }
    }
    f->repeats = repeats;
    f->device_s = bench_median(dev, repeats);
    f->wall_s = bench_median(wall, repeats);
    f->median = bench_median(val, repeats); /* sorts val: min and max are its ends */
    f->min = val[0];
    f->max = val[repeats - 1];
    free(dev), free(wall), free(val);
    return 0;
fail:
    bench_engine_failure(f, why);
out:
    kiln_step_reset(ctx);
    free(dev), free(wall), free(val);
    return -1;
}

/* ---- the run ---- */

static double load_average(void) {
    double l[1];
    return getloadavg(l, 1) == 1 ? l[0] : NAN;
}

/* Parses "a,b,c" against names[0..n): sets flags[i] for each name given. */
static int parse_list(const char *option, const char *text, const char *const *names, int *const *flags, int n) {
    for (int i = 0; i < n; i++) *flags[i] = 0;
    const char *p = text;
    while (*p) {
        size_t len = strcspn(p, ",");
        int found = 0;
        for (int i = 0; i < n; i++)
            if (strlen(names[i]) == len && !strncmp(p, names[i], len)) *flags[i] = found = 1;
        if (!found) {
            char valid[256] = "";
            for (int i = 0; i < n; i++)
                snprintf(valid + strlen(valid), sizeof valid - strlen(valid), "%s%s", i ? ", " : "", names[i]);
            return host_error("%s: unknown item '%.*s' (expected a comma-separated list of %s)", option,
                              (int)len, p, valid);
        }
        p += len;
        if (*p == ',') p++;
    }
    return 0;
}

/* Runs the sections on one opened device and prints its figures as they come. */
static void run_device(kiln_ctx *ctx, const char *id, const bench_options *o, bench_device *d) {
    snprintf(d->id, sizeof d->id, "%s", id);
    snprintf(d->backend, sizeof d->backend, "%s", kiln_backend_name(ctx));
    snprintf(d->name, sizeof d->name, "%s", kiln_device_name(ctx));
    const char *driver = kiln_device_driver(ctx);
    snprintf(d->driver, sizeof d->driver, "%s", driver ? driver : "");
    d->load_start = load_average();
    double t0 = progress_now();
    bench_print_device(stdout, d); /* the header; rows follow as they are measured */
    if (o->ceilings) bench_ceilings(ctx, o, d);
    if (o->kernels) bench_kernels(ctx, o, d);
    if (o->models) bench_models(ctx, o, d);
    if (o->decode) bench_decode(ctx, o, d);
    d->seconds = progress_now() - t0;
    d->load_end = load_average();
    printf("  (%.0f s; load average %.1f at the start, %.1f at the end)\n\n", d->seconds, d->load_start,
           d->load_end);
    fflush(stdout);
}

/* Opens backend:index. Returns the context, or NULL with *status set (the engine's message
 * stays set for the caller). */
static kiln_ctx *open_device(const char *backend, int index, kiln_status *status) {
    char name[64];
    snprintf(name, sizeof name, "%s:%d", backend, index);
    kiln_ctx *ctx = NULL;
    *status = kiln_open(name, &ctx);
    return *status == KILN_OK ? ctx : NULL;
}

static int add_device(bench_run *run) {
    bench_device *d = realloc(run->devices, (size_t)(run->n_devices + 1) * sizeof *d);
    if (!d) return host_error("out of host memory");
    run->devices = d;
    memset(&d[run->n_devices++], 0, sizeof *d);
    return 0;
}

static void run_free(bench_run *run) {
    for (int i = 0; i < run->n_devices; i++) free(run->devices[i].figs);
    free(run->devices);
}

/* Every device of `backend` (or only device `only` when >= 0). Returns 0, or 1 when a
 * device that was asked for cannot be opened. */
static int run_backend(bench_run *run, const char *backend, int only, int asked, const bench_options *o) {
    for (int index = only >= 0 ? only : 0;; index++) {
        kiln_status st;
        kiln_ctx *ctx = open_device(backend, index, &st);
        if (!ctx) {
            /* the end of the device list, or a backend without a driver here */
            if (asked && (only >= 0 || index == 0))
                return host_error("kiln bench: %s", kiln_error_message());
            if (index == 0) fprintf(stderr, "kiln bench: %s: skipped: %s\n", backend, kiln_error_message());
            kiln_clear_error();
            return 0;
        }
        char id[32];
        snprintf(id, sizeof id, "%s:%d", backend, index);
        fprintf(stderr, "kiln bench: running on %s device %s\n", backend, kiln_device_name(ctx));
        if (add_device(run)) {
            kiln_close(ctx);
            return 1;
        }
        run_device(ctx, id, o, &run->devices[run->n_devices - 1]);
        kiln_close(ctx);
        if (only >= 0) return 0;
    }
}

static void describe_run(bench_run *run, int argc, char **argv) {
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(run->created, sizeof run->created, "%Y-%m-%dT%H:%M:%SZ", &tm);
    size_t at = 0;
    run->command[0] = 0;
    for (int i = 0; i < argc && at < sizeof run->command; i++)
        at += (size_t)snprintf(run->command + at, sizeof run->command - at, "%s%s", i ? " " : "",
                               i == 0 ? "kiln" : argv[i]);
    if (gethostname(run->host, sizeof run->host)) snprintf(run->host, sizeof run->host, "unknown");
    run->host[sizeof run->host - 1] = 0;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    run->cpus = cpus > 0 ? (int)cpus : 0;
}

/* `kiln bench --help` and `kiln bench decode --help`. */
static const char BENCH_SUMMARY[] =
    "Measures each device (cpu, every vulkan:N and opencl:N, or the one named): its ceilings\n"
    "(FMA f32/f16 at several vector widths, copy bandwidth, host<->device transfers, dispatch\n"
    "latency), the kernel classes of a transformer at GPT-2 sizes as a percentage of those\n"
    "ceilings, and a training step and decoding of the `tiny` and `gpt2-small` models.\n"
    "Device time (timestamps, profiling events) is shown beside wall time.\n"
    "\n"
    "Decode: single-stream tokens/s at each weight format (f32, f16, Q8_0, Q4_0; --formats any\n"
    "type or mix of kiln quantize), the weight\n"
    "bytes per token against copy bandwidth, prefill tokens/s and memory (kiln bench decode:\n"
    "that section alone).\n"
    "\n"
    "Other bench commands: kiln bench compare A.json B.json ... (runs side by side),\n"
    "kiln bench gemm (f32 GEMM vs OpenBLAS/CLBlast), kiln bench train (vs PyTorch).";
static const char DECODE_SUMMARY[] =
    "Single-stream decoding on each device (cpu, every vulkan:N and opencl:N, or the one named)\n"
    "at each weight format (default f32, f16, Q8_0, Q4_0; --formats takes every type and mix of\n"
    "kiln quantize), for the named shapes from a random init\n"
    "(--models: tiny, gpt2-small; smollm2-135m, the Llama family's, on request) or for --ckpt\n"
    "(a checkpoint, GGUF file or Hugging Face folder; a quantized file runs in its own format\n"
    "only): tokens/s (greedy, each token's logits read back), the weight\n"
    "bytes a token reads against the copy bandwidth the run measures, prefill tokens/s and the\n"
    "memory each format needs. The decode section of `kiln bench`, alone.";

/* What the command line asks for besides bench_options: where, and the lists as given. */
typedef struct bench_args {
    const char *backend, *json, *only, *models, *precisions, *formats;
    int device;
} bench_args;

/* --only, --formats, --models and --precision into o's flags; 0, or 1 with one line printed. */
static int parse_lists(const bench_args *a, bench_options *o) {
    const char *section_names[] = {"ceilings", "kernels", "models", "decode"};
    int *section_flags[] = {&o->ceilings, &o->kernels, &o->models, &o->decode};
    const char *format_names[GPT_QUANT_TYPE_COUNT];
    int *format_flags[GPT_QUANT_TYPE_COUNT];
    for (int i = 0; i < GPT_QUANT_TYPE_COUNT; i++) format_names[i] = gpt_quant_type_at(i)->name, format_flags[i] = &o->formats[i];
    const char *model_names[BENCH_MODEL_SIZES];
    int *model_flags[BENCH_MODEL_SIZES];
    for (int i = 0; i < BENCH_MODEL_SIZES; i++) model_names[i] = bench_model_name(i), model_flags[i] = &o->sizes[i];
    const char *precision_names[] = {"fp32", "fp16"};
    int *precision_flags[] = {&o->fp32, &o->fp16};
    return parse_list("--only", a->only, section_names, section_flags, 4) ||
           parse_list("--formats", a->formats, format_names, format_flags, GPT_QUANT_TYPE_COUNT) ||
           parse_list("--models", a->models, model_names, model_flags, BENCH_MODEL_SIZES) ||
           parse_list("--precision", a->precisions, precision_names, precision_flags, 2);
}

/* Parses the options into *a and *o, --quick lowering what was not given; 0 to go on, else
 * 1 with the exit code in *exit_code (--help: 0). */
static int parse_options(int argc, char **argv, int decode_only, bench_args *a, bench_options *o, int *exit_code) {
    *a = (bench_args){.only = decode_only ? "decode" : "ceilings,kernels,models,decode", .models = "tiny,gpt2-small",
                      .precisions = "fp32,fp16", .formats = "f32,f16,q8_0,q4_0", .device = -1};
    *o = (bench_options){.repeat = 5, .prompt = 64, .tokens = 32};
    cli_opt opts[] = {
        {.name = "--backend", .kind = CLI_STRING, .target = &a->backend, .meta = "NAME",
         .help = "cpu, vulkan or opencl: only that backend's devices (default: all)"},
        {.name = "--device", .kind = CLI_INT, .target = &a->device, .meta = "N",
         .help = "only device N of --backend, as listed by kiln info (-1: all)", .min = -1, .max = 1024},
        {.name = "--json", .kind = CLI_STRING, .target = &a->json, .meta = "FILE",
         .help = "also write every figure, the devices and the build to FILE"},
        {.name = "--only", .kind = CLI_STRING, .target = &a->only, .meta = "LIST",
         .help = "sections to run: ceilings, kernels, models, decode"},
        {.name = "--models", .kind = CLI_STRING, .target = &a->models, .meta = "LIST",
         .help = "model sizes: tiny, gpt2-small, smollm2-135m (SmolLM2-135M's Llama-family shape)"},
        {.name = "--precision", .kind = CLI_STRING, .target = &a->precisions, .meta = "LIST",
         .help = "model precisions: fp32, fp16 (mixed precision)"},
        {.name = "--formats", .kind = CLI_STRING, .target = &a->formats, .meta = "LIST",
         .help = "decode: weight formats: f32, f16, a pure type (q8_0 q4_0 q4_1 q5_0 q5_1 q4_k q5_k q6_k) or "
                 "llama.cpp's mix (q4_k_m q4_k_s q5_k_m q5_k_s)"},
        {.name = "--ckpt", .kind = CLI_STRING, .target = &o->ckpt, .meta = "FILE",
         .help = "decode: a checkpoint, GGUF file or Hugging Face folder instead of --models"},
        {.name = "--prompt", .kind = CLI_INT, .target = &o->prompt, .meta = "N",
         .help = "decode: prompt tokens (at most half the model's context)", .min = 1, .max = 1 << 20},
        {.name = "--tokens", .kind = CLI_INT, .target = &o->tokens, .meta = "N",
         .help = "decode: tokens decoded per timed run (within the model's context)", .min = 1, .max = 1 << 20},
        {.name = "--repeat", .kind = CLI_INT, .target = &o->repeat, .meta = "N",
         .help = "timed runs per ceiling and kernel (the median is reported)", .min = 1, .max = 1000},
        {.name = "--quick", .kind = CLI_FLAG, .target = &o->quick,
         .help = "a smoke run: small sizes, few repeats, one sequence of the tiny model (not representative)"},
    };
    const int n = (int)(sizeof opts / sizeof opts[0]);
    int rc = cli_parse(decode_only ? "bench decode" : "bench", decode_only ? DECODE_SUMMARY : BENCH_SUMMARY, argc,
                       argv, decode_only ? 3 : 2, opts, n);
    *exit_code = rc < 0 ? 1 : 0;
    if (rc) return 1;
    if (parse_lists(a, o)) return *exit_code = 1;
    if (o->quick && !cli_find(opts, n, "--models")->seen) o->sizes[BENCH_GPT2_SMALL] = 0;
    if (o->quick && !cli_find(opts, n, "--repeat")->seen) o->repeat = 2;
    if (o->quick && !cli_find(opts, n, "--tokens")->seen) o->tokens = 8;
    if (o->quick && !cli_find(opts, n, "--prompt")->seen) o->prompt = 16;
    return 0;
}

/* --device needs --backend, and --backend names one this build has; 0, or 1 with one line
 * printed. */
static int check_backend(const bench_args *a) {
    if (a->device >= 0 && !a->backend) return host_error("--device needs --backend (cpu, vulkan or opencl)");
    if (!a->backend) return 0;
    const char *const *compiled = kiln_backends_compiled();
    int found = 0;
    for (int i = 0; compiled[i]; i++) found |= !strcmp(compiled[i], a->backend);
    return found ? 0 : host_error("--backend %s: not a backend of this build (see kiln info)", a->backend);
}

/* The run's first lines: the build, the host, and how to read the figures. */
static void print_run_header(const bench_run *run) {
    printf("kiln bench: kiln %s, commit %.12s, host %s, %d CPUs, load average %.1f\n"
           "median and spread (min-max) over the timed runs; device and wall: median time of one run;\n"
           "of ceiling: the median over the ceiling's best run (FMA of the same precision for GEMMs\n"
           "and model FLOP/s, copy bandwidth for the memory-bound kernels and decoding)\n\n",
           KILN_VERSION_STRING, KILN_GIT_COMMIT, run->host, run->cpus, load_average());
#ifndef __OPTIMIZE__
    printf("note: this kiln is built without optimization: the cpu backend's kernels and models\n"
           "measure unoptimized code\n\n");
#endif
    fflush(stdout);
}

/* After the devices ran (rc: 0, or 1 when one asked for could not open): the JSON, and the
 * exit code, non-zero when no device ran or a figure failed. Frees the run. */
static int finish_run(bench_run *run, int rc, const char *json) {
    int errors = 0;
    for (int i = 0; i < run->n_devices; i++)
        for (int k = 0; k < run->devices[i].n_figs; k++) errors += run->devices[i].figs[k].error;
    if (rc == 0 && json && run->n_devices) rc = bench_write_json(run, json);
    if (rc == 0 && run->n_devices == 0) rc = host_error("kiln bench: no device could be opened (see kiln info)");
    if (rc == 0 && errors) rc = host_error("kiln bench: %d figure%s failed or are impossible (marked error above)",
                                           errors, errors == 1 ? "" : "s");
    run_free(run);
    return rc;
}

int kiln_bench_main(int argc, char **argv) {
    /* `kiln bench decode [options]` is `kiln bench --only decode [options]` */
    const int decode_only = argc >= 3 && !strcmp(argv[2], "decode");
    bench_args a;
    bench_options o;
    int rc;
    if (parse_options(argc, argv, decode_only, &a, &o, &rc)) return rc;
    if (check_backend(&a)) return 1;
    /* a result file that cannot be written is found out now, not after minutes of work */
    if (a.json && bench_check_json_path(a.json)) return 1;
    if (o.decode && o.ckpt && bench_decode_check_ckpt(o.ckpt)) return 1;
    bench_run run = {0};
    describe_run(&run, argc, argv);
    print_run_header(&run);
    const char *const *compiled = kiln_backends_compiled();
    rc = 0;
    for (int i = 0; rc == 0 && compiled[i]; i++)
        if (!a.backend || !strcmp(a.backend, compiled[i]))
            rc = run_backend(&run, compiled[i], a.device, a.backend != NULL, &o);
    return finish_run(&run, rc, a.json);
}
