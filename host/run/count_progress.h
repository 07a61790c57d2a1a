/* Progress of a command that works through a known count of items (kiln eval's windows or
 * pairs, decode --input-file's lines) on stderr, as training's bar (run/progress.h) does for
 * steps: on a terminal one line redrawn in place ("kiln eval: 120/400 windows  ETA 1m02s"),
 * at most five times a second; elsewhere (a log file, CI) a plain line every 10 s, so a short
 * run stays quiet and a long one shows it is alive. Nothing goes to stdout. */
#ifndef KILN_HOST_RUN_COUNT_PROGRESS_H
#define KILN_HOST_RUN_COUNT_PROGRESS_H

#include <stdint.h>
#include <stdio.h>

typedef struct count_progress {
    FILE *out;
    int tty;
    const char *command, *unit; /* "eval", "windows" */
    int64_t total;
    double start, last_shown;
    int shown; /* a bar is drawn on the terminal's current line */
} count_progress;

void count_progress_init(count_progress *p, FILE *out, const char *command, const char *unit, int64_t total);
/* `done` of the total items are finished. */
void count_progress_update(count_progress *p, int64_t done);
/* count_progress_update with an eval_watch's signature (model/eval_watch.h): `self` is the
 * count_progress, whose total it keeps. */
void count_progress_done(void *self, int64_t done, int64_t total);
/* Clears a drawn bar, so the command's own last lines start on a clean line. */
void count_progress_finish(count_progress *p);

#endif
