/* `kiln plot`: training runs' metrics.jsonl overlaid as one SVG, one panel per metric.
 *
 * A run is a directory (its metrics.jsonl) or a .jsonl file; the legend names it by its
 * --label, else by its directory (or file) name, with as many of the folders above as it
 * takes to tell it from the other runs (a/model and b/model), and it keeps its colour in
 * every panel. Scalar metrics are lines over steps; attn_entropy (a list per layer) is
 * drawn as the mean over layers, with attn_entropy_min dashed; grad_norm_layers is drawn
 * against the layer index, at the first row that has it or at --at-step, and its panel
 * names the step. */
#define _XOPEN_SOURCE 700 /* realpath */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/commands.h"
#include "formats/json.h"
#include "formats/svg_chart.h"
#include "formats/text_line.h"
#include "run/cli.h"

enum { MAX_METRICS = 8 };

/* The metrics `kiln plot` knows, and how each is drawn. */
typedef enum metric_kind { OVER_STEPS, ENTROPY, BY_LAYER } metric_kind;
static const struct {
    const char *name, *label;
    metric_kind kind;
} known[] = {
    {.name = "loss", .label = "training loss"},
    {.name = "val_loss", .label = "validation loss"},
    {.name = "lr", .label = "learning rate"},
    {.name = "grad_norm", .label = "gradient norm"},
    {.name = "loss_scale", .label = "loss scale"},
    {.name = "tokens_per_s", .label = "tokens/s"},
    {.name = "attn_entropy", .label = "attention entropy (nats)", .kind = ENTROPY},
    {.name = "attn_entropy_min", .label = "lowest head's entropy (nats)"},
    {.name = "grad_norm_layers", .label = "gradient norm", .kind = BY_LAYER},
};
enum { N_KNOWN = sizeof known / sizeof known[0] };

/* One run's rows, parsed. */
typedef struct run {
    char name[256];  /* the legend's */
    char path[4096]; /* where it is (its real path when it has one): the default name's source */
    json_value **rows;
    int n_rows;
} run;

static void free_run(run *r) {
    for (int i = 0; i < r->n_rows; i++) json_free(r->rows[i]);
    free(r->rows);
}

/* Reads a run's metrics.jsonl: every line a JSON object with a "step"; a line that is not
 * is an error naming the file and line. */
static int read_run(const char *arg, run *r) {
    char path[4096];
    struct stat st;
    int is_dir = stat(arg, &st) == 0 && S_ISDIR(st.st_mode);
    snprintf(path, sizeof path, is_dir ? "%s/metrics.jsonl" : "%s", arg);
    /* the run's path: the directory, or the file (its directory for metrics.jsonl) */
    char trimmed[4096];
    snprintf(trimmed, sizeof trimmed, "%s", is_dir ? arg : path);
    size_t len = strlen(trimmed);
    while (len > 1 && trimmed[len - 1] == '/') trimmed[--len] = 0;
    if (!is_dir && len > 14 && !strcmp(trimmed + len - 14, "/metrics.jsonl")) trimmed[len -= 14] = 0;
    char *real = realpath(trimmed, NULL);
    snprintf(r->path, sizeof r->path, "%s", real ? real : trimmed);
    free(real);
    FILE *f = fopen(path, "rb");
    if (!f) return host_error("%s: cannot open (a run directory with metrics.jsonl, or a .jsonl file)", path);
    char *line = NULL;
    size_t cap = 0, n;
    int lineno = 0, rc = 0, got;
    while (!rc && (got = text_read_line(f, &line, &cap, &n)) != 0) {
        if (got < 0) {
            rc = host_error("%s: out of memory", path);
            break;
        }
        lineno++;
        json_value *row;
        char jerr[128];
        int64_t step;
        if (json_parse(line, n, &row, jerr, sizeof jerr)) {
            rc = host_error("%s:%d: %s", path, lineno, jerr);
            break;
        }
        if (row->type != JSON_OBJECT || !json_as_int64(json_get(row, "step"), &step)) {
            json_free(row);
            rc = host_error("%s:%d: not a metrics row (a JSON object with a whole-number \"step\")", path, lineno);
            break;
        }
        json_value **grown = realloc(r->rows, (size_t)(r->n_rows + 1) * sizeof *grown);
        if (!grown) {
            json_free(row);
            rc = host_error("%s: out of memory", path);
            break;
        }
        r->rows = grown;
        r->rows[r->n_rows++] = row;
    }
    free(line);
    fclose(f);
    if (!rc && r->n_rows == 0) rc = host_error("%s: no rows (the run has not logged a step yet)", path);
    return rc;
}

/* The number of trailing path components a and b share. */
static int common_tail(const char *a, const char *b) {
    size_t i = strlen(a), j = strlen(b);
    int shared = 0;
    while (i && j) {
        size_t ei = i, ej = j; /* one component back from each end */
        while (i && a[i - 1] != '/') i--;
        while (j && b[j - 1] != '/') j--;
        if (ei - i != ej - j || strncmp(a + i, b + j, ei - i)) break;
        shared++;
        while (i && a[i - 1] == '/') i--;
        while (j && b[j - 1] == '/') j--;
    }
    return shared;
}

/* Run i's default name: the last component of its path, with as many folders above it as
 * tell it from every other run's path (the same path twice is the same run). */
static void default_name(run *r, int n_runs, int i) {
    int need = 1;
    for (int j = 0; j < n_runs; j++)
        if (j != i && strcmp(r[i].path, r[j].path)) {
            int shared = common_tail(r[i].path, r[j].path);
            if (shared + 1 > need) need = shared + 1;
        }
    const char *p = r[i].path, *start = p + strlen(p);
    for (int k = 0; k < need && start > p; k++) {
        start--; /* onto the slash before the component (or its last character) */
        while (start > p && start[-1] != '/') start--;
        if (k + 1 < need)
            while (start > p && start[-1] == '/') start--;
    }
    snprintf(r[i].name, sizeof r[i].name, "%.255s", start);
}

/* A number, or NaN for null, a missing key or anything else. */
static double number_of(const json_value *v) {
    double d;
    return v && json_as_double(v, &d) ? d : NAN;
}

/* The series of one metric of one run: x and y arrays the caller frees. A profile over
 * the layers (BY_LAYER) sets *step to the step it is of. */
static int series_of(const run *r, int metric, int64_t at_step, int color, chart_series *out, int *n_out,
                     int64_t *step_of) {
    int n = 0;
    double *x = NULL, *y = NULL, *y_min = NULL;
    if (known[metric].kind == BY_LAYER) {
        const json_value *list = NULL;
        for (int i = 0; i < r->n_rows && !list; i++) {
            int64_t step;
            json_as_int64(json_get(r->rows[i], "step"), &step);
            const json_value *v = json_get(r->rows[i], known[metric].name);
            if (v && v->type == JSON_ARRAY && (at_step < 0 || step == at_step)) {
                list = v;
                *step_of = step;
            }
        }
        if (!list) return 0;
        n = (int)list->as.array.count;
        x = malloc((size_t)(n ? n : 1) * sizeof *x);
        y = malloc((size_t)(n ? n : 1) * sizeof *y);
        if (!x || !y) goto oom;
        for (int i = 0; i < n; i++) {
            x[i] = i;
            y[i] = number_of(&list->as.array.items[i]);
        }
        out[0] = (chart_series){.x = x, .y = y, .n = n, .color = color};
        *n_out = 1;
        return 0;
    }
    x = malloc((size_t)r->n_rows * sizeof *x);
    y = malloc((size_t)r->n_rows * sizeof *y);
    y_min = malloc((size_t)r->n_rows * sizeof *y_min);
    if (!x || !y || !y_min) goto oom;
    for (int i = 0; i < r->n_rows; i++) {
        const json_value *row = r->rows[i], *v = json_get(row, known[metric].name);
        double value = NAN;
        if (known[metric].kind == ENTROPY) {
            /* the mean over the layers that have a value */
            if (!v || v->type != JSON_ARRAY) continue;
            double sum = 0;
            int count = 0;
            for (size_t k = 0; k < v->as.array.count; k++) {
                double e = number_of(&v->as.array.items[k]);
                if (isfinite(e)) sum += e, count++;
            }
            value = count ? sum / count : NAN;
            y_min[n] = number_of(json_get(row, "attn_entropy_min"));
        } else {
            if (!v) continue; /* val_loss exists at evaluations only: skipped, not zero */
            value = number_of(v);
        }
        x[n] = number_of(json_get(row, "step"));
        y[n++] = value;
    }
    if (n == 0) { /* this run never logged the metric */
        free(x);
        free(y);
        free(y_min);
        return 0;
    }
    out[0] = (chart_series){.x = x, .y = y, .n = n, .color = color};
    *n_out = 1;
    if (known[metric].kind == ENTROPY) {
        out[1] = (chart_series){.x = x, .y = y_min, .n = n, .color = color, .dashed = 1};
        *n_out = 2;
    } else {
        free(y_min);
    }
    return 0;
oom:
    free(x);
    free(y);
    free(y_min);
    return host_error("out of memory");
}

/* The distinct steps of the runs' layer profiles, in run order: the panel names them. */
enum { MAX_STEPS_NAMED = 4 };
static int add_step(int64_t *steps, int n, int64_t step) {
    if (n > MAX_STEPS_NAMED) return n; /* more than fit: "at several steps" */
    for (int i = 0; i < n; i++)
        if (steps[i] == step) return n;
    if (n < MAX_STEPS_NAMED) steps[n] = step;
    return n + 1;
}

/* "grad_norm_layers at step 50", "... at steps 1, 50", or "... at several steps". */
static void name_steps(char *title, size_t size, const char *metric, const int64_t *steps, int n) {
    if (n > MAX_STEPS_NAMED) {
        snprintf(title, size, "%s at several steps", metric);
        return;
    }
    int at = snprintf(title, size, "%s at step%s ", metric, n > 1 ? "s" : "");
    for (int i = 0; i < n && at > 0 && (size_t)at < size; i++)
        at += snprintf(title + at, size - (size_t)at, "%s%" PRId64, i ? ", " : "", steps[i]);
}

int cmd_plot(int argc, char **argv) {
    cli_list runs = {0}, labels = {0};
    const char *out = NULL, *metrics = "loss,val_loss", *title = "kiln training runs";
    int at_step = -1;
    cli_opt opts[] = {
        {.name = "RUN", .kind = CLI_POSITIONAL, .target = &runs},
        {.name = "-o", .kind = CLI_STRING, .target = &out, .meta = "FILE.svg", .help = "the SVG to write"},
        {.name = "--metric", .kind = CLI_STRING, .target = &metrics, .meta = "LIST",
         .help = "comma-separated: loss, val_loss, lr, grad_norm, loss_scale, tokens_per_s, attn_entropy, "
                 "attn_entropy_min, grad_norm_layers"},
        {.name = "--title", .kind = CLI_STRING, .target = &title, .meta = "TEXT", .help = "the figure's title"},
        {.name = "--label", .kind = CLI_LIST, .target = &labels, .meta = "NAME",
         .help = "the legend's name of the next RUN, in order (default: its folder's name, with the folders above "
                 "that tell it from the others)"},
        {.name = "--at-step", .kind = CLI_INT, .target = &at_step, .meta = "N",
         .help = "grad_norm_layers: the profile at this step (-1: the first that has it)", .min = -1, .max = 1 << 30},
    };
    int n = (int)(sizeof opts / sizeof opts[0]);
    const char *summary =
        "Overlays training runs (RUN: a directory with metrics.jsonl, or a .jsonl file) as one SVG,\n"
        "one panel per metric, with a legend; log scale where the values span decades. The first RUN is\n"
        "drawn on top, and each run has its own marker shape, so runs with equal values stay visible.";
    int rc = cli_parse("plot", summary, argc, argv, 2, opts, n);
    if (rc) return rc < 0 ? 1 : 0;
    if (!out) return host_error("kiln plot needs -o FILE.svg");
    if (!runs.count) return host_error("kiln plot needs at least one run (a directory or a metrics .jsonl file)");
    if (labels.count > runs.count)
        return host_error("--label is given %d times for %d run%s", labels.count, runs.count, runs.count > 1 ? "s" : "");
    int chosen[MAX_METRICS], n_metrics = 0;
    char list[256];
    snprintf(list, sizeof list, "%s", metrics);
    for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
        int k = 0;
        while (k < N_KNOWN && strcmp(known[k].name, tok)) k++;
        if (k == N_KNOWN) return host_error("--metric %s is not one kiln logs (see kiln plot --help)", tok);
        if (n_metrics == MAX_METRICS) return host_error("--metric: at most %d metrics", MAX_METRICS);
        chosen[n_metrics++] = k;
    }
    if (!n_metrics) return host_error("--metric needs at least one metric");

    run *r = calloc((size_t)runs.count, sizeof *r);
    chart_series *series = calloc((size_t)(2 * runs.count * n_metrics), sizeof *series);
    chart_panel panels[MAX_METRICS];
    memset(panels, 0, sizeof panels);
    const char **legend = calloc((size_t)runs.count, sizeof *legend);
    rc = !r || !series || !legend ? host_error("out of memory") : 0;
    for (int i = 0; i < runs.count && !rc; i++) rc = read_run(runs.items[i], &r[i]);
    for (int i = 0; i < runs.count && !rc; i++) {
        if (i < labels.count) snprintf(r[i].name, sizeof r[i].name, "%.255s", labels.items[i]);
        else default_name(r, runs.count, i);
        legend[i] = r[i].name;
    }
    int used = 0;
    for (int m = 0; m < n_metrics && !rc; m++) {
        chart_panel *p = &panels[m];
        int k = chosen[m];
        snprintf(p->title, sizeof p->title, "%s", known[k].name);
        snprintf(p->x_label, sizeof p->x_label, "%s", known[k].kind == BY_LAYER ? "layer" : "step");
        snprintf(p->y_label, sizeof p->y_label, "%s%s", known[k].label,
                 known[k].kind == ENTROPY ? " (mean; dashed: lowest head)" : "");
        p->series = series + used;
        int64_t steps[MAX_STEPS_NAMED];
        int n_steps = 0;
        for (int i = 0; i < runs.count && !rc; i++) {
            int got = 0;
            int64_t step = -1;
            rc = series_of(&r[i], k, at_step, i, series + used, &got, &step);
            used += got;
            p->n_series += got;
            if (got && step >= 0) n_steps = add_step(steps, n_steps, step);
        }
        if (known[k].kind == BY_LAYER && n_steps) name_steps(p->title, sizeof p->title, known[k].name, steps, n_steps);
        if (!rc && !p->n_series) rc = host_error("no run has %s", known[k].name);
        p->log_y = known[k].kind == OVER_STEPS && strcmp(known[k].name, "loss") && strcmp(known[k].name, "val_loss")
                       ? chart_wants_log(p->series, p->n_series)
                       : known[k].kind == BY_LAYER && chart_wants_log(p->series, p->n_series);
    }
    char err[512];
    if (!rc && svg_chart_write(out, title, panels, n_metrics, legend, runs.count, err, sizeof err))
        rc = host_error("%s", err);
    for (int i = 0; i < used; i++) {
        /* the entropy's two series share x: free it with the first */
        if (!series[i].dashed) free((void *)series[i].x);
        free((void *)series[i].y);
    }
    for (int i = 0; r && i < runs.count; i++) free_run(&r[i]);
    free(r);
    free(series);
    free(legend);
    if (!rc) fprintf(stderr, "kiln plot: %s (%d run%s, %d panel%s)\n", out, runs.count, runs.count > 1 ? "s" : "",
                     n_metrics, n_metrics > 1 ? "s" : "");
    return rc;
}
