/* The GPT run's LoRA phases (gpt_train_lora.h). */
#define _XOPEN_SOURCE 700
#include "cli/gpt/gpt_train_lora.h"

#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/train_parallel.h"
#include "model/precision.h"
#include "run/cli.h"
#include "run/gpt_load.h"

int lora_run_base(lora_run *r, const train_options *o, const run_paths *paths) {
    char err[1024];
    if (o->init) {
        /* recorded absolute, so a resume from another folder finds it */
        char *full = realpath(o->init, NULL);
        snprintf(r->base, sizeof r->base, "%s", full ? full : o->init);
        free(full);
        return 0;
    }
    if (lora_file_meta(paths->model, "kiln.base.path", r->base, sizeof r->base, err, sizeof err) || !r->base[0])
        return host_error("%s: the adapter does not say where its base is; give it with --init BASE", paths->model);
    if (!train_file_exists(r->base))
        return host_error("%s: its base %s is not there; give it with --init BASE", paths->model, r->base);
    return 0;
}

gpt_model *lora_run_load(lora_run *r, kiln_ctx *ctx, const train_options *o) {
    char err[1024];
    gpt_model *m;
    lora_base_format(r->base, r->format, sizeof r->format);
    /* fp16 reads the base as f16 without a master copy (an f16 file stays as it is); fp32
       holds an f16 base in f32; quantized blocks stay quantized either way */
    kiln_dtype dtype = o->hp.precision == KILN_F16 ? KILN_F16 : KILN_F32;
    if (host_load_gpt_model_as(ctx, r->base, dtype, &m, err, sizeof err)) {
        host_error("%s", err);
        return NULL;
    }
    if (lora_base_trainable(m, err, sizeof err)) {
        host_error("%s: %s", r->base, err);
        gpt_free(m);
        return NULL;
    }
    if (dtype == KILN_F32 && (!strcmp(r->format, "F16") || !strcmp(r->format, "BF16")) && train_parallel_leads())
        fprintf(stderr, "kiln train: the base's %s weights are held in f32 for fp32 training (--precision fp16 keeps "
                        "them in f16)\n", r->format);
    return m;
}

/* A resumed adapter against the --lora-* options given. */
static int check_resumed(const lora_adapter *a, const gpt_model *m, const train_options *o) {
    char err[1024];
    unsigned targets;
    if ((o->lora_seen & 1u) && o->lora_rank != a->rank)
        return host_error("--lora-rank %d differs from the resumed adapter's rank %d", o->lora_rank, a->rank);
    if ((o->lora_seen & 2u) && o->lora_alpha != a->alpha)
        return host_error("--lora-alpha %g differs from the resumed adapter's %g", (double)o->lora_alpha, (double)a->alpha);
    if (o->lora_seen & 4u) {
        if (lora_targets_parse(&m->cfg, o->lora_targets, &targets, err, sizeof err)) return host_error("%s", err);
        if (targets != a->targets) return host_error("--lora-targets %s differs from the resumed adapter's", o->lora_targets);
    }
    if ((o->lora_seen & 8u) && o->lora_dropout != a->dropout)
        return host_error("--lora-dropout %g differs from the resumed adapter's %g", (double)o->lora_dropout,
                          (double)a->dropout);
    return 0;
}

int lora_run_adapter(lora_run *r, gpt_model *m, const tokenizer *tok, const train_options *o, const run_paths *paths) {
    char err[1024];
    if (lora_base_info_of(m, tok, r->base, &r->info, err, sizeof err)) return host_error("%s", err);
    if (o->resume) {
        if (lora_load(m, &r->info, paths->model, 1.0f, &r->a, err, sizeof err)) return host_error("%s", err);
        if (check_resumed(r->a, m, o)) return 1;
        if (r->info.warning[0] && train_parallel_leads()) fprintf(stderr, "kiln train: warning: %s\n", r->info.warning);
    } else {
        lora_options lo = {.rank = o->lora_rank, .alpha = o->lora_alpha, .dropout = o->lora_dropout};
        if (lora_targets_parse(&m->cfg, o->lora_targets, &lo.targets, err, sizeof err) ||
            !(r->a = lora_new(m, &lo, o->hp.seed, err, sizeof err)))
            return host_error("%s", err);
    }
    if (lora_attach(m, r->a, err, sizeof err)) return host_error("%s", err);
    return 0;
}

int lora_run_save(const lora_run *r, const trainer *t, const train_options *o, const run_paths *paths) {
    char err[1024], step[32];
    snprintf(step, sizeof step, "%" PRId64, t->step);
    model_meta meta[] = {{.key = "step", .value = step},
                         {.key = "written_by", .value = "kiln train"},
                         {.key = "training_precision", .value = precision_name(t->hp.precision)}};
    /* the optimizer state first, as for a model (cli/train_checkpoint.h) */
    if (train_save_optimizer(t, paths, err, sizeof err) ||
        lora_save_peft(r->a, &r->info, o->out, meta, (int)(sizeof meta / sizeof meta[0]), err, sizeof err))
        return host_error("%s", err);
    return 0;
}

void lora_run_describe(const lora_run *r, const gpt_model *m) {
    const lora_adapter *a = r->a;
    char targets[256] = "";
    for (int t = 0; t < LORA_TARGET_COUNT; t++)
        if (a->targets >> t & 1u)
            snprintf(targets + strlen(targets), sizeof targets - strlen(targets), "%s%s", targets[0] ? "," : "",
                     lora_target_modules[t]);
    int64_t trained = lora_param_count(a), base = gpt_param_count(m);
    fprintf(stderr, "kiln train: LoRA rank %d, alpha %g, dropout %g on %s: %.4gM trainable weights (%.2f%% of the "
                    "base's %.2fM, frozen, %s)\n",
            a->rank, (double)a->alpha, (double)a->dropout, targets, (double)trained / 1e6,
            100.0 * (double)trained / (double)(base > 0 ? base : 1), (double)base / 1e6, r->format);
}

void lora_run_free(lora_run *r) {
    lora_free(r->a);
    r->a = NULL;
}
