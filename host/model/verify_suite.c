/* The verification suite over the library's case table (model/verify_suite.h). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <string.h>

#include "model/verify_suite.h"
#include "model/model_kind.h"
#include "model/verify_model.h"

const char *verify_precision_name(kiln_verify_precision p) { return p == KILN_VERIFY_F16 ? "f16" : "f32"; }

/* Whether case `name` of `group` is selected by a filter "group" or "group/case". */
static int filter_matches(const char *filter, const char *group, const char *name) {
    if (!filter || !*filter) return 1;
    size_t len = strlen(group);
    if (strncmp(filter, group, len)) return 0;
    return !filter[len] || (filter[len] == '/' && !strcmp(filter + len + 1, name));
}

static int selected(const verify_selection *sel, const char *group, const char *name, int quick) {
    return (!sel->quick || quick) && filter_matches(sel->filter, group, name);
}

void verify_suite_list(const verify_selection *sel,
                       void (*fn)(const char *group, const char *name, const char *shapes, int f16, int quick,
                                  void *user),
                       void *user) {
    int n;
    const kiln_verify_group *const *groups = kiln_verify_groups(&n);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < groups[i]->count; j++) {
            const kiln_verify_case *c = &groups[i]->cases[j];
            char shapes[160];
            kiln_verify_shapes(c, shapes, sizeof shapes);
            if (selected(sel, groups[i]->name, c->name, c->quick))
                fn(groups[i]->name, c->name, shapes, kiln_verify_has_f16_form(c), c->quick, user);
        }
    /* each model kind's whole-model checks, in the group named after the kind */
    int n_kinds;
    const model_kind *const *kinds = model_kinds(&n_kinds);
    for (int k = 0; k < n_kinds; k++) {
        const verify_model_check *checks = kinds[k]->verify_checks ? kinds[k]->verify_checks(&n) : NULL;
        for (int i = 0; checks && i < n; i++) {
            if (i > 0 && !strcmp(checks[i].name, checks[i - 1].name)) continue; /* its f16 run */
            int f16 = i + 1 < n && !strcmp(checks[i + 1].name, checks[i].name);
            if (selected(sel, kinds[k]->name, checks[i].name, checks[i].quick))
                fn(kinds[k]->name, checks[i].name, checks[i].shapes, f16, checks[i].quick, user);
        }
    }
}

static void count_case(const char *group, const char *name, const char *shapes, int f16, int quick, void *user) {
    (void)group, (void)name, (void)shapes, (void)f16, (void)quick;
    ++*(int *)user;
}

int verify_filter_known(const char *filter) {
    verify_selection sel = {.filter = filter};
    int count = 0;
    verify_suite_list(&sel, count_case, &count);
    return count > 0;
}

void verify_run_name(const verify_run_info *run, char *buf, size_t size) {
    snprintf(buf, size, "%s/%s (%s%s%s)", run->group, run->name, verify_precision_name(run->precision),
             run->gemm_variant ? ", gemm " : "", run->gemm_variant ? run->gemm_variant : "");
}

/* One run: a case at one precision with one GEMM variant forced (or none), or a model
 * check (c NULL). Counts it. */
static kiln_status run_one(kiln_ctx *dev, kiln_ctx *cpu, const kiln_verify_case *c, const verify_model_check *check,
                           verify_run_info *run, verify_report_fn report, void *user, verify_totals *totals) {
    kiln_status st = kiln_set_gemm_variant(dev, run->gemm_variant);
    double t0 = kiln_clock_wall();
    if (st == KILN_OK && c) st = kiln_verify_run(dev, cpu, c, run->precision, &run->result);
    else if (st == KILN_OK) st = verify_model_run(check, dev, cpu, &run->result);
    run->seconds = kiln_clock_wall() - t0;
    kiln_set_gemm_variant(dev, NULL);
    char name[160];
    verify_run_name(run, name, sizeof name);
    if (st != KILN_OK) {
        char why[320];
        snprintf(why, sizeof why, "%s", kiln_error_message());
        return kiln_set_error(st, "%s could not run: %s", name, why);
    }
    if (run->result.verdict == KILN_VERIFY_PASS) totals->passed++;
    else if (run->result.verdict == KILN_VERIFY_SKIP) totals->skipped++;
    else if (totals->failed++ == 0)
        snprintf(totals->first_failure, sizeof totals->first_failure, "%s: %s", name, run->result.message);
    if (report) report(run, user);
    return KILN_OK;
}

kiln_status verify_suite_run(kiln_ctx *dev, kiln_ctx *cpu, const verify_selection *sel, verify_report_fn report,
                             void *user, verify_totals *totals) {
    memset(totals, 0, sizeof *totals);
    double start = kiln_clock_wall();
    const char *variants[9] = {NULL}; /* NULL first: the device's own choice */
    int n_variants = 1 + kiln_gemm_variants(dev, variants + 1, 8);
    int n;
    kiln_status st = KILN_OK;
    const kiln_verify_group *const *groups = kiln_verify_groups(&n);
    for (int i = 0; i < n && st == KILN_OK; i++) {
        const kiln_verify_group *g = groups[i];
        for (int j = 0; j < g->count && st == KILN_OK; j++) {
            const kiln_verify_case *c = &g->cases[j];
            if (!selected(sel, g->name, c->name, c->quick)) continue;
            for (int p = KILN_VERIFY_DECLARED; p <= KILN_VERIFY_F16 && st == KILN_OK; p++) {
                if (p == KILN_VERIFY_F16 && !kiln_verify_has_f16_form(c)) continue;
                /* the quick check trusts the device's own GEMM choice: the variants it
                 * does not pick are for the full run */
                int variants_here = g->gemm_variants && !sel->quick ? n_variants : 1;
                for (int v = 0; v < variants_here && st == KILN_OK; v++) {
                    verify_run_info run = {.group = g->name, .name = c->name, .precision = (kiln_verify_precision)p,
                                           .gemm_variant = variants[v]};
                    kiln_verify_shapes(c, run.shapes, sizeof run.shapes);
                    st = run_one(dev, cpu, c, NULL, &run, report, user, totals);
                }
            }
        }
    }
    int n_kinds;
    const model_kind *const *kinds = model_kinds(&n_kinds);
    for (int k = 0; k < n_kinds && st == KILN_OK; k++) {
        const verify_model_check *checks = kinds[k]->verify_checks ? kinds[k]->verify_checks(&n) : NULL;
        for (int i = 0; checks && i < n && st == KILN_OK; i++) {
            if (!selected(sel, kinds[k]->name, checks[i].name, checks[i].quick)) continue;
            verify_run_info run = {.group = kinds[k]->name, .name = checks[i].name, .precision = checks[i].precision};
            snprintf(run.shapes, sizeof run.shapes, "%s", checks[i].shapes);
            st = run_one(dev, cpu, NULL, &checks[i], &run, report, user, totals);
        }
    }
    totals->seconds = kiln_clock_wall() - start;
    return st;
}
