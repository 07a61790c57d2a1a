/* The terminal table of `kiln bench`: a header per device, a heading per section, and one
 * row per figure, printed as each is measured:
 *
 *   figure                      size                  median unit       spread (min-max)  of ceiling       device     wall
 *   GEMM f32 NN                 1024x3072x768          250.0 GFLOP/s    240.1-260.3        81% fma.f32   19.3 ms  19.5 ms
 *
 * The spread is the range over the timed repeats; "device" and "wall" are the median time of
 * one run on the device clock and the host clock. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bench/bench.h"

void bench_say(const bench_device *d, const char *what) {
    fprintf(stderr, "kiln bench: %s: %s\n", d->id, what);
}

/* A value in about four significant digits, "-" when not measured. */
void bench_format_value(double v, char *buf, size_t size) {
    if (!isfinite(v))
        snprintf(buf, size, "-");
    else if (fabs(v) >= 1000)
        snprintf(buf, size, "%.0f", v);
    else if (fabs(v) >= 10)
        snprintf(buf, size, "%.1f", v);
    else if (fabs(v) >= 1)
        snprintf(buf, size, "%.2f", v);
    else
        snprintf(buf, size, "%.3g", v);
}

/* Seconds as a short time with its unit. */
static void format_time(double s, char *buf, size_t size) {
    if (!isfinite(s) || s <= 0)
        snprintf(buf, size, "-");
    else if (s >= 1)
        snprintf(buf, size, "%.2f s", s);
    else if (s >= 1e-3)
        snprintf(buf, size, "%.3g ms", s * 1e3);
    else
        snprintf(buf, size, "%.3g us", s * 1e6);
}

void bench_print_device(FILE *out, const bench_device *d) {
    fprintf(out, "== %s  %s", d->id, d->name);
    if (d->driver[0]) fprintf(out, "  (driver %s)", d->driver);
    fprintf(out, "\n");
    fflush(out);
}

void bench_print_section(FILE *out, bench_section s) {
    fprintf(out, "%-33s %-22s %10s %-9s %-19s %-15s %9s %9s\n", bench_section_name(s), "size", "median", "unit",
            "spread (min-max)", "of ceiling", "device", "wall");
    fflush(out);
}

void bench_print_figure(FILE *out, const bench_figure *f) {
    char med[32], lo[32], hi[32], spread[72] = "", pct[48] = "", dev[32], wall[32];
    bench_format_value(f->median, med, sizeof med);
    if (isfinite(f->min) && isfinite(f->max)) {
        bench_format_value(f->min, lo, sizeof lo);
        bench_format_value(f->max, hi, sizeof hi);
        snprintf(spread, sizeof spread, "%s-%s", lo, hi);
    }
    if (isfinite(f->pct)) snprintf(pct, sizeof pct, "%5.1f%% %s", f->pct, f->ceiling);
    format_time(f->device_s, dev, sizeof dev);
    format_time(f->wall_s, wall, sizeof wall);
    if (!isfinite(f->median)) {
        fprintf(out, "  %-31s %-22s %10s %-9s %s\n", f->label, f->shape, "-", bench_unit_name(f->unit),
                f->note[0] ? f->note : "not measured");
    } else {
        fprintf(out, "  %-31s %-22s %10s %-9s %-19s %-15s %9s %9s%s%s\n", f->label, f->shape, med,
                bench_unit_name(f->unit), spread, pct, dev, wall, f->note[0] ? "  " : "", f->note);
    }
    fflush(out);
}
