/* Line charts as SVG: panels stacked vertically, each with its series, axes, ticks and
 * labels, and one legend for the whole figure. Points whose y is not finite break the line
 * (nothing is drawn as zero); values outside the panel's range are clipped to its edge and
 * marked. A panel on a log scale drops non-positive values the same way; its range widens
 * to labelled ticks at both ends (1, 2 and 5 times the powers of ten within three decades).
 * Each colour has its own marker shape, a few along each solid line at places that differ
 * from colour to colour, and the first series is drawn on top: equal curves stay visible. */
#ifndef KILN_HOST_FORMATS_SVG_CHART_H
#define KILN_HOST_FORMATS_SVG_CHART_H

#include <stddef.h>

typedef struct chart_series {
    const double *x, *y;
    int n;
    int color;  /* index into the figure's palette: the same run keeps its colour everywhere */
    int dashed;
} chart_series;

typedef struct chart_panel {
    char title[64];
    char x_label[32], y_label[64];
    int log_y;                 /* 1: a log scale (the caller decides, see chart_wants_log) */
    const chart_series *series;
    int n_series;
} chart_panel;

/* Whether values span enough decades (all positive, max / min >= 100) for a log scale. */
int chart_wants_log(const chart_series *series, int n_series);

/* Writes the figure to path atomically (kiln/file.h). legend[i] names
 * colour i. Returns 0, or -1 with a one-line message in err. */
int svg_chart_write(const char *path, const char *title, const chart_panel *panels, int n_panels,
                    const char *const *legend, int n_legend, char *err, size_t errlen);

#endif
