/* Training progress on stderr: on a terminal, one bar redrawn in place (step, loss, lr,
 * the loss scale S in fp16, tokens/s, ETA) with evaluation results printed above it; elsewhere (a log file, CI) plain
 * lines every `log_every` steps and at every evaluation. */
#ifndef KILN_HOST_RUN_PROGRESS_H
#define KILN_HOST_RUN_PROGRESS_H

#include <stdint.h>
#include <stdio.h>

typedef struct progress {
    FILE *out;
    int tty;
    int64_t first_step, total_steps; /* this run covers steps (first_step, total_steps] */
    int log_every;
    double start_time;
    double seconds_per_token; /* a moving average, so the shown rate does not jitter */
    int bar_shown;
    double loss_scale; /* > 0: shown as "S 65536" (mixed precision); set before progress_step */
    double low_entropy; /* not NaN: the lowest head's attention entropy, shown as "H_min 0.05"
                           because it fell below the alert threshold; set before progress_step */
} progress;

/* Monotonic seconds, for throughput and ETA. */
double progress_now(void);

/* A duration for an ETA: "1h02m", "3m07s", "12s". */
void progress_format_duration(char *buf, size_t size, double seconds);

void progress_init(progress *p, FILE *out, int64_t first_step, int64_t total_steps, int log_every);
/* Reports step `step` (1-based, the number of optimizer steps done) and that step's
 * throughput (shown averaged over the last few dozen steps). val_loss is NaN when the step
 * did not evaluate. */
void progress_step(progress *p, int64_t step, double loss, double lr, double tokens_per_s,
                   double val_loss);
/* Ends the bar's line, so later output starts on a fresh line. */
void progress_finish(progress *p);

#endif
