/* The evaluations' monitoring fields (train_monitor.h). */
#include "cli/train_monitor.h"

#include <math.h>
#include <stdlib.h>

#include "run/cli.h"

int train_monitor_init(train_monitor *mon, int n_layers) {
    mon->n_layers = n_layers;
    mon->lowest = NAN;
    if (!(mon->entropy = calloc(2 * (size_t)(n_layers > 0 ? n_layers : 1), sizeof(double))))
        return host_error("out of host memory");
    mon->grad_norms = mon->entropy + n_layers;
    return 0;
}

void train_monitor_before_step(train_monitor *mon, trainer *t, int evaluates) {
    t->layer_grad_norms = evaluates ? mon->grad_norms : NULL;
}

void train_monitor_row(const train_monitor *mon, const trainer *t, metrics_row *row) {
    row->n_layers = mon->n_layers;
    row->attn_entropy = mon->entropy_off ? NULL : mon->entropy;
    row->attn_entropy_min = mon->lowest;
    row->grad_norm_layers = t->layer_grad_norms ? mon->grad_norms : NULL;
}

void train_monitor_free(train_monitor *mon, trainer *t) {
    if (t) t->layer_grad_norms = NULL;
    free(mon->entropy);
    mon->entropy = mon->grad_norms = NULL;
}
