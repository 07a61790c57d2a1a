/* `kiln bench --json FILE`: the run as JSON, so runs from different machines can be kept and
 * compared (`kiln bench compare`). The layout (schema "kiln-bench/1"):
 *
 *   { "schema": "kiln-bench/1", "kiln_version": "0.1.0", "git_commit": "7ecadc3...",
 *     "created": "2025-01-01T12:00:00Z", "command": "kiln bench --json a.json",
 *     "host": {"name": "...", "cpus": 2},
 *     "devices": [ { "id": "vulkan:0", "backend": "vulkan", "name": "...", "driver": "...",
 *                    "load_start": 1.2, "load_end": 1.5, "seconds": 80.1,
 *                    "figures": [ { "key": "gemm.f32.nn", "section": "kernels",
 *                                   "label": "GEMM f32 NN", "shape": "256x3072x768",
 *                                   "unit": "GFLOP/s", "median": 30.1, "min": 29.0,
 *                                   "max": 31.2, "device_s": 0.04, "wall_s": 0.041,
 *                                   "repeats": 5, "ceiling": "fma.f32", "pct": 71.3,
 *                                   "note": "", "error": false }, ... ] }, ... ] }
 *
 * A number that was not measured is null. The commit is the one the build was configured
 * at (bench/CMakeLists.txt). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bench/bench.h"
#include "formats/json.h"
#include "kiln/file.h"
#include "run/cli.h"


static void put_number(FILE *f, const char *key, double v) {
    fprintf(f, "\"%s\": ", key);
    if (isfinite(v))
        fprintf(f, "%.9g", v);
    else
        fputs("null", f);
}

static void put_string(FILE *f, const char *key, const char *v) {
    fprintf(f, "\"%s\": ", key);
    json_write_string(f, v);
}

static void put_figure(FILE *f, const bench_figure *g) {
    fputs("        {", f);
    put_string(f, "key", g->key), fputs(", ", f);
    put_string(f, "section", bench_section_name(g->section)), fputs(", ", f);
    put_string(f, "label", g->label), fputs(", ", f);
    put_string(f, "shape", g->shape), fputs(", ", f);
    put_string(f, "unit", bench_unit_name(g->unit)), fputs(",\n         ", f);
    put_number(f, "median", g->median), fputs(", ", f);
    put_number(f, "min", g->min), fputs(", ", f);
    put_number(f, "max", g->max), fputs(", ", f);
    put_number(f, "device_s", g->device_s), fputs(", ", f);
    put_number(f, "wall_s", g->wall_s), fputs(", ", f);
    fprintf(f, "\"repeats\": %d, ", g->repeats);
    put_string(f, "ceiling", g->ceiling), fputs(", ", f);
    put_number(f, "pct", g->pct), fputs(", ", f);
    put_string(f, "note", g->note), fputs(", ", f);
    fprintf(f, "\"error\": %s}", g->error ? "true" : "false");
}

static void put_run(FILE *f, const bench_run *run) {
    fputs("{\n  ", f);
    put_string(f, "schema", BENCH_SCHEMA), fputs(",\n  ", f);
    put_string(f, "kiln_version", KILN_VERSION_STRING), fputs(",\n  ", f);
    put_string(f, "git_commit", KILN_GIT_COMMIT), fputs(",\n  ", f);
    put_string(f, "created", run->created), fputs(",\n  ", f);
    put_string(f, "command", run->command), fputs(",\n  ", f);
    fputs("\"host\": {", f);
    put_string(f, "name", run->host);
    fprintf(f, ", \"cpus\": %d},\n  \"devices\": [", run->cpus);
    for (int i = 0; i < run->n_devices; i++) {
        const bench_device *d = &run->devices[i];
        fputs(i ? ",\n    {" : "\n    {", f);
        put_string(f, "id", d->id), fputs(", ", f);
        put_string(f, "backend", d->backend), fputs(",\n     ", f);
        put_string(f, "name", d->name), fputs(",\n     ", f);
        put_string(f, "driver", d->driver), fputs(",\n     ", f);
        put_number(f, "load_start", d->load_start), fputs(", ", f);
        put_number(f, "load_end", d->load_end), fputs(", ", f);
        put_number(f, "seconds", d->seconds), fputs(",\n     \"figures\": [\n", f);
        for (int k = 0; k < d->n_figs; k++) {
            put_figure(f, &d->figs[k]);
            fputs(k + 1 < d->n_figs ? ",\n" : "\n", f);
        }
        fputs("     ]}", f);
    }
    fputs("\n  ]\n}\n", f);
}

int bench_check_json_path(const char *path) {
    char err[4400];
    kiln_file *f = kiln_file_begin(path, err, sizeof err);
    if (!f) return host_error("--json: cannot write %s", err);
    kiln_file_abort(f);
    return 0;
}

int bench_write_json(const bench_run *run, const char *path) {
    char err[4400];
    kiln_file *f = kiln_file_begin(path, err, sizeof err);
    if (!f) return host_error("%s", err);
    put_run(kiln_file_stream(f), run);
    if (kiln_file_commit(f, err, sizeof err) != KILN_OK) return host_error("%s", err);
    fprintf(stderr, "kiln bench: wrote %s\n", path);
    return 0;
}
