/* The verification suite over the library's case table (cli/verify_suite.h). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cli/verify_suite.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

const char *verify_precision_name(kiln_verify_precision p) { return p == KILN_VERIFY_F16 ? "f16" : "f32"; }

/* Whether case c of group g is selected by a filter "group" or "group/case". */
static int filter_matches(const char *filter, const kiln_verify_group *g, const kiln_verify_case *c) {
    if (!filter || !*filter) return 1;
    size_t len = strlen(g->name);
    if (strncmp(filter, g->name, len)) return 0;
    if (!filter[len]) return 1;
    return filter[len] == '/' && (!c || !strcmp(filter + len + 1, c->name));
}

int verify_filter_known(const char *filter) {
    int n;
    const kiln_verify_group *const *groups = kiln_verify_groups(&n);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < groups[i]->count; j++)
            if (filter_matches(filter, groups[i], &groups[i]->cases[j])) return 1;
    return 0;
}

kiln_status verify_suite_run(kiln_ctx *dev, kiln_ctx *cpu, const verify_selection *sel, verify_report_fn report,
                             void *user, verify_totals *totals) {
    memset(totals, 0, sizeof *totals);
    double start = now();
    int n;
    const kiln_verify_group *const *groups = kiln_verify_groups(&n);
    for (int i = 0; i < n; i++) {
        const kiln_verify_group *g = groups[i];
        for (int j = 0; j < g->count; j++) {
            const kiln_verify_case *c = &g->cases[j];
            if ((sel->quick && !c->quick) || !filter_matches(sel->filter, g, c)) continue;
            for (int p = KILN_VERIFY_DECLARED; p <= KILN_VERIFY_F16; p++) {
                if (p == KILN_VERIFY_F16 && !kiln_verify_has_f16_form(c)) continue;
                verify_run_info run = {.group = g, .c = c, .precision = (kiln_verify_precision)p};
                double t0 = now();
                kiln_status st = kiln_verify_run(dev, cpu, c, run.precision, &run.result);
                run.seconds = now() - t0;
                if (st != KILN_OK) {
                    totals->seconds = now() - start;
                    char why[320];
                    snprintf(why, sizeof why, "%s", kiln_error_message());
                    return kiln_set_error(st, "%s/%s (%s) could not run: %s", g->name, c->name,
                                                  verify_precision_name(run.precision), why);
                }
                if (run.result.verdict == KILN_VERIFY_PASS) totals->passed++;
                else if (run.result.verdict == KILN_VERIFY_SKIP) totals->skipped++;
                else if (totals->failed++ == 0)
                    snprintf(totals->first_failure, sizeof totals->first_failure, "%s/%s (%s): %s", g->name, c->name,
                             verify_precision_name(run.precision), run.result.message);
                if (report) report(&run, user);
            }
        }
    }
    totals->seconds = now() - start;
    return KILN_OK;
}
