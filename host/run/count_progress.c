/* Progress over a count of items (see count_progress.h). */
#define _POSIX_C_SOURCE 200809L
#include "run/count_progress.h"

#include <unistd.h>

#include "run/progress.h"

void count_progress_init(count_progress *p, FILE *out, const char *command, const char *unit, int64_t total) {
    *p = (count_progress){.out = out, .tty = isatty(fileno(out)), .command = command, .unit = unit,
                          .total = total, .start = progress_now()};
    p->last_shown = p->start;
}

void count_progress_update(count_progress *p, int64_t done) {
    double now = progress_now();
    /* a plain line every 10 s; the bar five times a second (and at the end) */
    if (now - p->last_shown < (p->tty ? 0.2 : 10.0) && !(p->tty && done == p->total)) return;
    p->last_shown = now;
    char eta[32];
    progress_format_duration(eta, sizeof eta, done > 0 ? (now - p->start) / (double)done * (double)(p->total - done) : 0);
    if (p->tty) {
        fprintf(p->out, "\r\033[Kkiln %s: %lld/%lld %s  ETA %s", p->command, (long long)done, (long long)p->total,
                p->unit, eta);
        p->shown = 1;
    } else {
        fprintf(p->out, "kiln %s: %lld/%lld %s, eta %s\n", p->command, (long long)done, (long long)p->total, p->unit,
                eta);
    }
    fflush(p->out);
}

void count_progress_finish(count_progress *p) {
    if (p->shown) fputs("\r\033[K", p->out);
    p->shown = 0;
    fflush(p->out);
}

void count_progress_done(void *self, int64_t done, int64_t total) {
    (void)total;
    count_progress_update(self, done);
}
