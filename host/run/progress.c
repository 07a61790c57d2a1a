/* Training progress display (see progress.h). */
#define _POSIX_C_SOURCE 200809L
#include "run/progress.h"
#include "kiln/probe.h"

#include <math.h>
#include <unistd.h>

double progress_now(void) { return kiln_clock_wall(); }

void progress_init(progress *p, FILE *out, int64_t first_step, int64_t total_steps, int log_every) {
    p->out = out;
    p->tty = isatty(fileno(out));
    p->first_step = first_step;
    p->total_steps = total_steps;
    p->log_every = log_every > 0 ? log_every : 1;
    p->start_time = progress_now();
    p->seconds_per_token = 0;
    p->bar_shown = 0;
    p->loss_scale = 0;
    p->low_entropy = NAN;
}

void progress_format_duration(char *buf, size_t size, double seconds) {
    long s = seconds > 0 && seconds < 1e9 ? (long)(seconds + 0.5) : 0;
    if (s >= 3600)
        snprintf(buf, size, "%ldh%02ldm", s / 3600, s % 3600 / 60);
    else if (s >= 60)
        snprintf(buf, size, "%ldm%02lds", s / 60, s % 60);
    else
        snprintf(buf, size, "%lds", s);
}

void progress_step(progress *p, int64_t step, double loss, double lr, double tokens_per_s,
                   double val_loss) {
    double elapsed = progress_now() - p->start_time;
    int64_t done = step - p->first_step, left = p->total_steps - step;
    char eta[32];
    progress_format_duration(eta, sizeof eta, done > 0 ? elapsed / (double)done * (double)left : 0);
    int evaluated = !isnan(val_loss);
    /* average time per token, not tokens per second: one slow step then weighs as much
     * as it cost */
    if (tokens_per_s > 0) {
        double spt = 1.0 / tokens_per_s;
        p->seconds_per_token = p->seconds_per_token > 0 ? 0.9 * p->seconds_per_token + 0.1 * spt : spt;
        tokens_per_s = 1.0 / p->seconds_per_token;
    }
    if (!p->tty) {
        if (step % p->log_every == 0 || evaluated || step == p->total_steps) {
            fprintf(p->out, "step %lld/%lld  loss %.4f  lr %.3e", (long long)step,
                    (long long)p->total_steps, loss, lr);
            if (p->loss_scale > 0) fprintf(p->out, "  S %g", p->loss_scale);
            if (!isnan(p->low_entropy)) fprintf(p->out, "  H_min %.3f", p->low_entropy);
            fprintf(p->out, "  %.0f tokens/s  eta %s", tokens_per_s, eta);
            if (evaluated) fprintf(p->out, "  val loss %.4f", val_loss);
            fputc('\n', p->out);
            fflush(p->out);
        }
        return;
    }
    /* \r and "erase to end of line" redraw the bar in place; an evaluation is printed as a
     * permanent line above it. */
    if (evaluated)
        fprintf(p->out, "\r\033[Kstep %lld: loss %.4f, val loss %.4f\n", (long long)step, loss,
                val_loss);
    const int width = 24;
    int filled = p->total_steps > 0 ? (int)(width * step / p->total_steps) : width;
    char bar[32];
    for (int i = 0; i < width; i++) bar[i] = i < filled ? '#' : '.';
    bar[width] = 0;
    fprintf(p->out, "\r\033[K[%s] %lld/%lld  loss %.4f  lr %.2e", bar, (long long)step,
            (long long)p->total_steps, loss, lr);
    if (p->loss_scale > 0) fprintf(p->out, "  S %g", p->loss_scale);
    if (!isnan(p->low_entropy)) fprintf(p->out, "  H_min %.3f", p->low_entropy);
    fprintf(p->out, "  %.0f tok/s  ETA %s", tokens_per_s, eta);
    fflush(p->out);
    p->bar_shown = 1;
}

void progress_finish(progress *p) {
    if (p->tty && p->bar_shown) fputc('\n', p->out);
    p->bar_shown = 0;
    fflush(p->out);
}
