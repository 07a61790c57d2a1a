/* `kiln bench compare A.json B.json ...`: the figures of several `kiln bench --json` runs side
 * by side, one column per device of each file, one row per figure key (in the order the
 * files first name them, grouped by section). A cell is the median and, where the figure is
 * a fraction of a ceiling, that percentage; where the columns measured a figure at different
 * sizes (a faster device gets a bigger GEMM), a line under the row gives each column's size.
 *
 * Every file is read and checked before anything is printed: a missing file, a file that
 * is not JSON and a JSON file that is not a kiln bench result each end the command with one
 * line naming the file and what is wrong. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "formats/json.h"
#include "run/cli.h"

/* Result files are a few hundred KiB; anything far larger is not one. */
#define COMPARE_MAX_BYTES ((size_t)64 << 20)
#define COMPARE_MAX_COLUMNS 64
#define CELL_WIDTH 22

typedef struct column {
    const char *file;
    const json_value *run, *device, *figures;
} column;

/* Reads a whole result file, up to COMPARE_MAX_BYTES. Returns the text (NUL-terminated) or
 * NULL after printing an error. */
static char *read_result_text(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return host_error("bench compare: cannot read %s: %s", path, strerror(errno)), NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    while (buf) {
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap) break;
        if (cap >= COMPARE_MAX_BYTES) {
            free(buf);
            fclose(f);
            return host_error("bench compare: %s is larger than %zu MiB: not a kiln bench result", path,
                              COMPARE_MAX_BYTES >> 20),
                   NULL;
        }
        char *grown = realloc(buf, 2 * cap + 1);
        if (!grown) free(buf);
        buf = grown;
        cap *= 2;
    }
    int failed = ferror(f);
    fclose(f);
    if (!buf) return host_error("bench compare: out of host memory reading %s", path), NULL;
    if (failed) {
        free(buf);
        return host_error("bench compare: cannot read %s", path), NULL;
    }
    buf[n] = 0;
    *len = n;
    return buf;
}

/* The checks of the schema. Each returns 0, or 1 after printing "FILE is not a kiln bench
 * result: WHERE ...". */
static int foreign(const char *file, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int foreign(const char *file, const char *fmt, ...) {
    char detail[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    return host_error("bench compare: %s is not a kiln bench result: %s", file, detail);
}

static int need(const char *file, const json_value *obj, const char *key, json_type type, int nullable,
                const char *where) {
    const json_value *v = json_get(obj, key);
    char path[128];
    snprintf(path, sizeof path, "%s%s", where, key);
    if (!v) return foreign(file, "%s is missing", path);
    if (v->type == type || (nullable && v->type == JSON_NULL)) return 0;
    return foreign(file, "%s should be a %s", path, json_type_name(type));
}

static int check_figure(const char *file, const json_value *fig, size_t device, size_t index) {
    char where[96];
    snprintf(where, sizeof where, "devices[%zu].figures[%zu].", device, index);
    if (!fig || fig->type != JSON_OBJECT)
        return foreign(file, "devices[%zu].figures[%zu] should be an object", device, index);
    static const char *const strings[] = {"key", "label", "unit"};
    for (int i = 0; i < 3; i++)
        if (need(file, fig, strings[i], JSON_STRING, 0, where)) return 1;
    if (need(file, fig, "median", JSON_NUMBER, 1, where)) return 1;
    /* optional, but typed when present */
    static const char *const numbers[] = {"min", "max", "pct", "device_s", "wall_s"};
    for (int i = 0; i < 5; i++)
        if (json_get(fig, numbers[i]) && need(file, fig, numbers[i], JSON_NUMBER, 1, where)) return 1;
    static const char *const texts[] = {"shape", "ceiling", "note", "section"};
    for (int i = 0; i < 4; i++)
        if (json_get(fig, texts[i]) && need(file, fig, texts[i], JSON_STRING, 0, where)) return 1;
    return 0;
}

/* Parses and checks one file; appends a column per device. Returns 0 or 1 (error printed). */
static int load(const char *path, json_value **root, column *cols, int *n_cols) {
    size_t len = 0;
    char *text = read_result_text(path, &len);
    if (!text) return 1;
    char err[256];
    int rc = json_parse(text, len, root, err, sizeof err);
    free(text);
    if (rc) return host_error("bench compare: %s is not valid JSON: %s", path, err);
    const json_value *r = *root;
    if (r->type != JSON_OBJECT) return foreign(path, "the top level is a JSON %s, not an object", json_type_name(r->type));
    const char *schema = json_as_string(json_get(r, "schema"));
    if (!schema) return foreign(path, "it has no \"schema\": \"%s\"", BENCH_SCHEMA);
    if (strcmp(schema, BENCH_SCHEMA))
        return host_error("bench compare: %s has schema \"%s\"; this kiln reads \"%s\"", path, schema, BENCH_SCHEMA);
    if (need(path, r, "devices", JSON_ARRAY, 0, "")) return 1;
    const json_value *devs = json_get(r, "devices");
    if (json_count(devs) == 0) return foreign(path, "\"devices\" is empty");
    for (size_t i = 0; i < json_count(devs); i++) {
        const json_value *d = json_at(devs, i);
        char where[64];
        snprintf(where, sizeof where, "devices[%zu].", i);
        if (d->type != JSON_OBJECT) return foreign(path, "devices[%zu] should be an object", i);
        if (need(path, d, "id", JSON_STRING, 0, where) || need(path, d, "name", JSON_STRING, 0, where) ||
            need(path, d, "figures", JSON_ARRAY, 0, where))
            return 1;
        const json_value *figs = json_get(d, "figures");
        for (size_t k = 0; k < json_count(figs); k++)
            if (check_figure(path, json_at(figs, k), i, k)) return 1;
        if (*n_cols == COMPARE_MAX_COLUMNS) return host_error("bench compare: at most %d devices in all", COMPARE_MAX_COLUMNS);
        cols[(*n_cols)++] = (column){.file = path, .run = r, .device = d, .figures = figs};
    }
    return 0;
}

static const json_value *figure_of(const column *c, const char *key) {
    for (size_t k = 0; k < json_count(c->figures); k++) {
        const json_value *f = json_at(c->figures, k);
        const char *fk = json_as_string(json_get(f, "key"));
        if (fk && !strcmp(fk, key)) return f;
    }
    return NULL;
}

static const char *string_or(const json_value *obj, const char *key, const char *fallback) {
    const char *s = json_as_string(json_get(obj, key));
    return s ? s : fallback;
}

static double number_or_nan(const json_value *obj, const char *key) {
    double v;
    return json_as_double(json_get(obj, key), &v) ? v : NAN;
}

/* "-": the run has no such figure; "n/a" or "error": it has one that was not measured. */
static void print_cell(const json_value *f) {
    char cell[64], med[32];
    int error = 0;
    if (!f) {
        snprintf(cell, sizeof cell, "-");
    } else if (!isfinite(number_or_nan(f, "median"))) {
        snprintf(cell, sizeof cell, "%s", json_as_bool(json_get(f, "error"), &error) && error ? "error" : "n/a");
    } else {
        bench_format_value(number_or_nan(f, "median"), med, sizeof med);
        double pct = number_or_nan(f, "pct");
        if (isfinite(pct))
            snprintf(cell, sizeof cell, "%s (%.0f%%)", med, pct);
        else
            snprintf(cell, sizeof cell, "%s", med);
    }
    printf(" %-*s", CELL_WIDTH - 1, cell);
}

/* One row per key of `section` (figures without a section are in ceilings). */
static void print_section(const column *cols, int n, const char *section) {
    int printed_heading = 0;
    for (int c = 0; c < n; c++) {
        for (size_t k = 0; k < json_count(cols[c].figures); k++) {
            const json_value *f = json_at(cols[c].figures, k);
            const char *key = string_or(f, "key", "");
            if (strcmp(string_or(f, "section", "ceilings"), section)) continue;
            /* printed already, by an earlier column or earlier in this one */
            int seen = 0;
            for (int e = 0; e < c && !seen; e++) seen = figure_of(&cols[e], key) != NULL;
            if (seen || figure_of(&cols[c], key) != f) continue;
            if (!printed_heading) printf("%s\n", section), printed_heading = 1;
            printf("  %-30s %-9s", string_or(f, "label", key), string_or(f, "unit", ""));
            const char *shape0 = NULL;
            int shapes_differ = 0;
            for (int e = 0; e < n; e++) {
                const json_value *g = figure_of(&cols[e], key);
                print_cell(g);
                /* sizes matter where there is a number to compare */
                const char *sh = g && isfinite(number_or_nan(g, "median")) ? string_or(g, "shape", "") : NULL;
                if (sh && !shape0) shape0 = sh;
                if (sh && shape0 && strcmp(sh, shape0)) shapes_differ = 1;
            }
            printf("\n");
            if (shapes_differ) {
                printf("  %-30s %-9s", "  (size)", "");
                for (int e = 0; e < n; e++) {
                    const json_value *g = figure_of(&cols[e], key);
                    const int measured = g && isfinite(number_or_nan(g, "median"));
                    printf(" %-*.*s", CELL_WIDTH - 1, CELL_WIDTH - 1, measured ? string_or(g, "shape", "") : "");
                }
                printf("\n");
            }
        }
    }
}

int kiln_bench_compare_main(int argc, char **argv) {
    if (argc < 2) return host_error("bench compare: give the result files to compare (kiln bench compare A.json B.json ...)");
    if (cli_help_asked(argc, argv, 1)) {
        printf("usage: kiln bench compare FILE.json [FILE.json ...]\n\n"
               "Prints the figures of `kiln bench --json FILE` runs side by side: one column per\n"
               "device of each file, the median and (in parentheses) its percentage of the\n"
               "device's ceiling, and the sizes where the columns measured at different ones.\n");
        return 0;
    }
    for (int i = 1; i < argc; i++) {
        if (!strncmp(argv[i], "--", 2))
            return host_error("bench compare: unknown option '%s' (see kiln bench compare --help)", argv[i]);
    }
    int n_files = argc - 1, n = 0, rc = 0;
    json_value **roots = calloc((size_t)n_files, sizeof *roots);
    column *cols = calloc(COMPARE_MAX_COLUMNS, sizeof *cols);
    if (!roots || !cols) rc = host_error("out of host memory");
    for (int i = 0; rc == 0 && i < n_files; i++) rc = load(argv[1 + i], &roots[i], cols, &n);
    if (rc == 0) {
        printf("columns:\n");
        for (int c = 0; c < n; c++) {
            const json_value *r = cols[c].run, *d = cols[c].device;
            printf("  [%d] %s  %s  %s; kiln %s, commit %.12s, %s", c + 1, cols[c].file, string_or(d, "id", "?"),
                   string_or(d, "name", "?"), string_or(r, "kiln_version", "?"), string_or(r, "git_commit", "?"),
                   string_or(r, "created", "?"));
            double l0 = number_or_nan(d, "load_start"), l1 = number_or_nan(d, "load_end");
            if (isfinite(l0) && isfinite(l1)) printf(", load %.1f-%.1f", l0, l1);
            printf("\n");
        }
        printf("\n  %-30s %-9s", "figure", "unit");
        for (int c = 0; c < n; c++) {
            char head[16];
            snprintf(head, sizeof head, "[%d]", c + 1);
            printf(" %-*s", CELL_WIDTH - 1, head);
        }
        printf("\n");
        for (int s = 0; s < BENCH_SECTIONS; s++) print_section(cols, n, bench_section_name((bench_section)s));
    }
    for (int i = 0; roots && i < n_files; i++) json_free(roots[i]);
    free(roots);
    free(cols);
    return rc;
}
