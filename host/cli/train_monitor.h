/* The monitoring every model's evaluations log (model/metrics.h): per-layer attention
 * entropy and per-layer gradient norms. A kind's command keeps one train_monitor sized to
 * its layers; before a step that will evaluate it asks the trainer for that step's
 * gradient norms (measured between backward and the update), and its evaluation fills the
 * row from what the model's entropy probe measured. */
#ifndef KILN_HOST_CLI_TRAIN_MONITOR_H
#define KILN_HOST_CLI_TRAIN_MONITOR_H

#include <stdint.h>

#include "model/metrics.h"
#include "model/trainer.h"

typedef struct train_monitor {
    int n_layers;
    double *entropy, *grad_norms; /* [n_layers] each (one allocation) */
    double lowest;                /* the lowest head's entropy */
    int entropy_off;              /* this evaluation measured no entropy (the GPT's fused runs) */
} train_monitor;

/* Returns 0, or 1 with the error printed. */
int train_monitor_init(train_monitor *mon, int n_layers);
/* From loop.before_step: the step's gradient norms are measured when it evaluates. */
void train_monitor_before_step(train_monitor *mon, trainer *t, int evaluates);
/* From loop.evaluate, after mon->entropy and mon->lowest were measured: the row's fields. */
void train_monitor_row(const train_monitor *mon, const trainer *t, metrics_row *row);
/* Detaches the trainer (t may be NULL) and frees the lists. */
void train_monitor_free(train_monitor *mon, trainer *t);

#endif
