/* SVG line charts (see svg_chart.h). Plain SVG 1.1 that browsers and rsvg render alike. */
#include "formats/svg_chart.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/file.h"

/* Colour-blind-safe palette (Okabe and Ito), then darker repeats. */
static const char *const palette[] = {"#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00",
                                      "#56B4E9", "#000000", "#F0E442", "#7F3C8D", "#11A579",
                                      "#3969AC", "#F2B701", "#E73F74", "#80BA5A"};
enum { N_COLORS = sizeof palette / sizeof palette[0] };

enum { WIDTH = 960, PANEL_H = 260, TOP = 50, GAP = 75, LEFT = 80, RIGHT = 280, PLOT_W = WIDTH - LEFT - RIGHT };

int chart_wants_log(const chart_series *series, int n_series) {
    double lo = INFINITY, hi = 0;
    for (int s = 0; s < n_series; s++)
        for (int i = 0; i < series[s].n; i++) {
            double y = series[s].y[i];
            if (!isfinite(y)) continue;
            if (y <= 0) return 0;
            lo = fmin(lo, y);
            hi = fmax(hi, y);
        }
    return isfinite(lo) && hi / lo >= 100;
}

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* A diverged run's last values (1e9 where the rest sit near 2) would flatten every other
 * line: the top of a linear y range stops at the 90th percentile plus three times the
 * 10-90 spread, and points above it are drawn clipped at the edge. */
static double robust_top(const chart_panel *p, double hi) {
    int n = 0;
    for (int s = 0; s < p->n_series; s++) n += p->series[s].n;
    double *v = malloc((size_t)(n ? n : 1) * sizeof *v);
    if (!v) return hi;
    int k = 0;
    for (int s = 0; s < p->n_series; s++)
        for (int i = 0; i < p->series[s].n; i++)
            if (isfinite(p->series[s].y[i])) v[k++] = p->series[s].y[i];
    double top = hi;
    if (k >= 10) {
        qsort(v, (size_t)k, sizeof *v, by_value);
        double q10 = v[k / 10], q90 = v[(k * 9) / 10], cap = q90 + 3 * (q90 - q10);
        if (cap > q90 && cap < hi) top = cap;
    }
    free(v);
    return top;
}

/* The range of the finite (and, on a log scale, positive) values. */
static int data_range(const chart_panel *p, int axis_y, double *lo, double *hi) {
    *lo = INFINITY;
    *hi = -INFINITY;
    for (int s = 0; s < p->n_series; s++)
        for (int i = 0; i < p->series[s].n; i++) {
            double v = axis_y ? p->series[s].y[i] : p->series[s].x[i];
            if (!isfinite(v) || (axis_y && p->log_y && v <= 0)) continue;
            *lo = fmin(*lo, v);
            *hi = fmax(*hi, v);
        }
    if (!isfinite(*lo)) return 0;
    if (axis_y && !p->log_y) *hi = robust_top(p, *hi);
    if (*hi == *lo) { /* one value: a range around it */
        double pad = *lo == 0 ? 1 : fabs(*lo) * 0.1;
        *lo -= pad;
        *hi += pad;
    } else if (axis_y && !p->log_y) { /* a margin, so that no line runs along the frame */
        double pad = 0.03 * (*hi - *lo);
        *lo -= pad;
        *hi += pad;
    }
    return 1;
}

/* A "nice" tick step for a range: 1, 2 or 5 times a power of ten, about 5 ticks. */
static double nice_step(double span) {
    double raw = span / 5, mag = pow(10, floor(log10(raw))), f = raw / mag;
    return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * mag;
}

typedef struct axis {
    double lo, hi; /* in data units (log10 of them on a log scale) */
    int log;
    int dense; /* a log axis' ticks at 1, 2 and 5 (log_widen) */
    double px0, px1;
} axis;

static double to_px(const axis *a, double v) {
    double t = a->log ? log10(v) : v;
    return a->px0 + (t - a->lo) / (a->hi - a->lo) * (a->px1 - a->px0);
}

static void text(FILE *f, double x, double y, const char *anchor, int size, const char *s, const char *extra) {
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\" font-size=\"%d\"%s>", x, y, anchor, size, extra);
    for (; *s; s++) { /* escape the three characters XML needs escaped in text */
        if (*s == '<') fputs("&lt;", f);
        else if (*s == '>') fputs("&gt;", f);
        else if (*s == '&') fputs("&amp;", f);
        else fputc(*s, f);
    }
    fputs("</text>\n", f);
}

/* The vertical grid lines and their labels, at nice steps along x. */
static void x_grid(FILE *f, const axis *ax, double top, double bottom) {
    double xs = nice_step(ax->hi - ax->lo);
    for (double v = ceil(ax->lo / xs) * xs; v <= ax->hi + 1e-9 * xs; v += xs) {
        double x = to_px(ax, v);
        char label[32];
        snprintf(label, sizeof label, "%g", v);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e0e0e0\"/>\n", x, top, x, bottom);
        text(f, x, bottom + 16, "middle", 12, label, "");
    }
}

/* A log axis' ticks: 1, 2 and 5 times each power of ten when the range spans at most
 * three decades, else the powers of ten alone. */
static int log_ticks_dense(double lo, double hi) { return hi - lo <= 3 + 1e-9; }

/* The tick at or below (down) or at or above (!down) 10^e, as a log10. */
static double log_tick(double e, int dense, int down) {
    static const double steps[] = {0, 0.30103, 0.69897}; /* log10 of 1, 2, 5 */
    double decade = floor(e + 1e-9);
    if (!dense) return down ? decade : ceil(e - 1e-9);
    if (down) {
        for (int i = 2; i >= 0; i--)
            if (decade + steps[i] <= e + 1e-9) return decade + steps[i];
        return decade;
    }
    for (int i = 0; i < 3; i++)
        if (decade + steps[i] >= e - 1e-9) return decade + steps[i];
    return decade + 1;
}

/* A log axis widened to ticks at both ends, so that both ends are labelled. */
static void log_widen(axis *ay) {
    int dense = ay->dense = log_ticks_dense(ay->lo, ay->hi);
    double lo = log_tick(ay->lo, dense, 1), hi = log_tick(ay->hi, dense, 0);
    if (hi - lo < 1e-9) hi = log_tick(hi + 0.01, dense, 0); /* one value: up to the next tick */
    ay->lo = lo;
    ay->hi = hi;
}

static void y_tick(FILE *f, double y, double value) {
    char label[32];
    snprintf(label, sizeof label, "%g", value);
    fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#e0e0e0\"/>\n", LEFT, y, LEFT + PLOT_W, y);
    text(f, LEFT - 6, y + 4, "end", 12, label, "");
}

/* The horizontal grid lines and their labels: at log_widen's ticks on a log scale, else at
 * nice steps. */
static void y_grid(FILE *f, const axis *ay) {
    if (ay->log) {
        static const double mantissas[] = {1, 2, 5};
        int dense = ay->dense;
        for (double e = floor(ay->lo); e <= ceil(ay->hi); e++) {
            for (int i = 0; i < (dense ? 3 : 1); i++) {
                double t = e + log10(mantissas[i]);
                if (t < ay->lo - 1e-9 || t > ay->hi + 1e-9) continue;
                y_tick(f, ay->px0 + (t - ay->lo) / (ay->hi - ay->lo) * (ay->px1 - ay->px0),
                       mantissas[i] * pow(10, e));
            }
        }
        return;
    }
    double ys = nice_step(ay->hi - ay->lo);
    for (double v = ceil(ay->lo / ys) * ys; v <= ay->hi + 1e-9 * ys; v += ys)
        y_tick(f, to_px(ay, v), fabs(v) < 1e-12 * ys ? 0.0 : v);
}

/* The x label under the panel and the y label turned up its left side. */
static void axis_labels(FILE *f, const chart_panel *p, double top, double bottom) {
    text(f, LEFT + PLOT_W / 2.0, bottom + 34, "middle", 13, p->x_label, "");
    char ylab[96];
    snprintf(ylab, sizeof ylab, "%s%s", p->y_label, p->log_y ? " (log scale)" : "");
    fprintf(f, "<g transform=\"translate(%d,%.1f) rotate(-90)\">\n", LEFT - 52, top + PANEL_H / 2.0);
    text(f, 0, 0, "middle", 13, ylab, "");
    fputs("</g>\n", f);
}

/* Whether the point's y can be placed on the y axis (finite, and positive on a log scale). */
static int y_placeable(const axis *ay, double y) { return isfinite(y) && !(ay->log && y <= 0); }

/* A series' line: a polyline per unbroken stretch; values above the range sit at the top. */
static void series_line(FILE *f, const chart_series *c, const axis *ax, const axis *ay, double top) {
    const char *colour = palette[c->color % N_COLORS];
    int open = 0;
    for (int i = 0; i < c->n; i++) {
        if (!y_placeable(ay, c->y[i]) || !isfinite(c->x[i])) {
            if (open) fputs("\"/>\n", f);
            open = 0;
            continue;
        }
        double py = to_px(ay, c->y[i]), px = to_px(ax, c->x[i]);
        if (py < top) py = top; /* above the range: at the edge, marked below */
        if (!open) {
            fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.8\"%s points=\"", colour,
                    c->dashed ? " stroke-dasharray=\"6,4\"" : "");
            open = 1;
        }
        fprintf(f, "%.1f,%.1f ", px, py);
    }
    if (open) fputs("\"/>\n", f);
}

/* What the line alone would hide: a triangle at the top for each clipped point, a dot for
 * each point without a neighbour, and an x at the last finite point of a run that ended in
 * inf or NaN. */
static void series_marks(FILE *f, const chart_series *c, const axis *ax, const axis *ay, double top) {
    const char *colour = palette[c->color % N_COLORS];
    for (int i = 0; i < c->n; i++)
        if (y_placeable(ay, c->y[i]) && to_px(ay, c->y[i]) < top)
            fprintf(f, "<path d=\"M%.1f,%.1f l-4,7 h8 z\" fill=\"%s\"/>\n", to_px(ax, c->x[i]), top + 1, colour);
    for (int i = 0; i < c->n; i++) {
        int before = i > 0 && isfinite(c->y[i - 1]), after = i + 1 < c->n && isfinite(c->y[i + 1]);
        if (y_placeable(ay, c->y[i]) && !before && !after)
            fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"/>\n", to_px(ax, c->x[i]),
                    to_px(ay, c->y[i]), colour);
    }
    if (!c->n || isfinite(c->y[c->n - 1])) return;
    for (int i = c->n - 1; i >= 0; i--) {
        if (y_placeable(ay, c->y[i])) {
            double px = to_px(ax, c->x[i]), py = to_px(ay, c->y[i]);
            fprintf(f, "<path d=\"M%.1f,%.1f l8,8 m0,-8 l-8,8\" stroke=\"%s\" stroke-width=\"2\"/>\n", px - 4,
                    py - 4, colour);
            text(f, px + 8, py - 6, "start", 11, "diverged", "");
            return;
        }
    }
}

/* Run i's marker shape: curves that coincide (two runs with equal losses) still show
 * both, as their markers sit at different places along the line. */
enum { N_SHAPES = 6 };
static void marker(FILE *f, int color, double x, double y) {
    const char *c = palette[color % N_COLORS];
    switch (color % N_SHAPES) {
    case 0: fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"%s\"/>\n", x, y, c); break;
    case 1: fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"8\" height=\"8\" fill=\"%s\"/>\n", x - 4, y - 4, c); break;
    case 2: fprintf(f, "<path d=\"M%.1f,%.1f l5,9 h-10 z\" fill=\"%s\"/>\n", x, y - 5, c); break;
    case 3: fprintf(f, "<path d=\"M%.1f,%.1f l5,5 l-5,5 l-5,-5 z\" fill=\"%s\"/>\n", x, y - 5, c); break;
    case 4: fprintf(f, "<path d=\"M%.1f,%.1f l5,-9 h-10 z\" fill=\"%s\"/>\n", x, y + 5, c); break;
    default:
        fprintf(f, "<path d=\"M%.1f,%.1f h10 m-5,-5 v10\" stroke=\"%s\" stroke-width=\"3\"/>\n", x - 5, y, c);
        break;
    }
}

/* A solid series' markers: MARKS of them spread along its x range, each run's shifted by a
 * different fraction of the spacing (golden-ratio steps), placed on the line between the
 * points around them. */
enum { MARKS = 6 };
static void series_markers(FILE *f, const chart_series *c, const axis *ax, const axis *ay, double top) {
    if (c->dashed || c->n < 2) return;
    double shift = fmod(0.5 + 0.618034 * c->color, 1.0), x0 = c->x[0], x1 = c->x[c->n - 1];
    for (int k = 0, i = 0; k < MARKS; k++) {
        double x = x0 + (k + shift) / MARKS * (x1 - x0);
        while (i + 2 < c->n && c->x[i + 1] < x) i++;
        if (!y_placeable(ay, c->y[i]) || !y_placeable(ay, c->y[i + 1]) || c->x[i + 1] <= c->x[i]) continue;
        double t = (x - c->x[i]) / (c->x[i + 1] - c->x[i]);
        double py0 = fmax(to_px(ay, c->y[i]), top), py1 = fmax(to_px(ay, c->y[i + 1]), top);
        marker(f, c->color, to_px(ax, x), py0 + t * (py1 - py0));
    }
}

static void panel(FILE *f, const chart_panel *p, double top) {
    double bottom = top + PANEL_H;
    fprintf(f, "<rect x=\"%d\" y=\"%.1f\" width=\"%d\" height=\"%d\" fill=\"#ffffff\" stroke=\"#444444\"/>\n", LEFT,
            top, PLOT_W, PANEL_H);
    text(f, LEFT + PLOT_W / 2.0, top - 8, "middle", 15, p->title, " font-weight=\"bold\"");
    axis ax = {.px0 = LEFT, .px1 = LEFT + PLOT_W}, ay = {.px0 = bottom, .px1 = top, .log = p->log_y};
    double ylo, yhi;
    if (!data_range(p, 0, &ax.lo, &ax.hi) || !data_range(p, 1, &ylo, &yhi)) {
        text(f, LEFT + PLOT_W / 2.0, top + PANEL_H / 2.0, "middle", 14, "no data", "");
        return;
    }
    ay.lo = p->log_y ? log10(ylo) : ylo;
    ay.hi = p->log_y ? log10(yhi) : yhi;
    if (p->log_y) log_widen(&ay);
    x_grid(f, &ax, top, bottom);
    y_grid(f, &ay);
    axis_labels(f, p, top, bottom);
    /* the first run on top: later ones are drawn first */
    for (int s = p->n_series - 1; s >= 0; s--) {
        series_line(f, &p->series[s], &ax, &ay, top);
        series_markers(f, &p->series[s], &ax, &ay, top);
        series_marks(f, &p->series[s], &ax, &ay, top);
    }
}

int svg_chart_write(const char *path, const char *title, const chart_panel *panels, int n_panels,
                    const char *const *legend, int n_legend, char *err, size_t errlen) {
    kiln_file *file = kiln_file_begin(path, err, errlen);
    if (!file) return -1;
    FILE *f = kiln_file_stream(file);
    int legend_h = 30 + 20 * n_legend;
    int height = TOP + n_panels * (PANEL_H + GAP);
    if (height < TOP + legend_h) height = TOP + legend_h;
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
               "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
               "font-family=\"sans-serif\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"#ffffff\"/>\n",
            WIDTH, height, WIDTH, height);
    text(f, WIDTH / 2.0, 24, "middle", 17, title, " font-weight=\"bold\"");
    for (int i = 0; i < n_panels; i++) panel(f, &panels[i], TOP + 20 + i * (PANEL_H + GAP));
    /* the legend, right of the panels */
    double lx = LEFT + PLOT_W + 20, ly = TOP + 30;
    for (int i = 0; i < n_legend; i++) {
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"3\"/>\n", lx,
                ly + 20 * i, lx + 24, ly + 20 * i, palette[i % N_COLORS]);
        marker(f, i, lx + 12, ly + 20 * i);
        text(f, lx + 30, ly + 20 * i + 4, "start", 12, legend[i], "");
    }
    fputs("</svg>\n", f);
    return kiln_file_commit(file, err, errlen) == KILN_OK ? 0 : -1;
}
