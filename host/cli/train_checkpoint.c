/* The checkpoint files of a training run (train_checkpoint.h). */
#define _POSIX_C_SOURCE 200809L
#include "cli/train_checkpoint.h"
#include "cli/train_parallel.h"

#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "formats/text_number.h"
#include "model/lora.h"
#include "model/model_checkpoint.h"
#include "run/cli.h"

int run_paths_init(run_paths *p, const char *out, int lora) {
    const char *names[] = {lora ? LORA_WEIGHTS_FILE : "model.safetensors", "optimizer.safetensors",
                           "optimizer.prev.safetensors"};
    char *dst[] = {p->model, p->optimizer, p->optimizer_prev};
    for (int i = 0; i < 3; i++)
        if ((size_t)snprintf(dst[i], sizeof p->model, "%s/%s", out, names[i]) >= sizeof p->model)
            return host_error("--out %s: the path is too long", out);
    return 0;
}

void train_remove_stale_temporaries(const char *out) {
    static const char *const prefixes[] = {"model.safetensors.tmp", "optimizer.safetensors.tmp",
                                           "optimizer.prev.safetensors.tmp", "config.json.tmp",
                                           "metrics.jsonl.tmp", LORA_WEIGHTS_FILE ".tmp",
                                           LORA_CONFIG_FILE ".tmp"};
    DIR *d = opendir(out);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++) {
            if (strncmp(e->d_name, prefixes[i], strlen(prefixes[i]))) continue;
            char path[4400];
            if ((size_t)snprintf(path, sizeof path, "%s/%s", out, e->d_name) < sizeof path) (void)remove(path);
            break;
        }
    }
    closedir(d);
}

int train_save_optimizer(const trainer *t, const run_paths *p, char *err, size_t errlen) {
    /* optimizer.safetensors -> optimizer.prev.safetensors without a moment when neither
     * exists: kiln/file.h's keep-previous mode */
    return trainer_save_state(t, p->optimizer, p->optimizer_prev, err, errlen);
}

/* The "step" in a checkpoint file's metadata: 1 and *step, 0 when absent or not a
 * number, -1 with err when the file cannot be read. */
static int file_step(const char *path, uint64_t *step, char *err, size_t errlen) {
    char text[32];
    int found = model_checkpoint_meta(path, "step", text, sizeof text, err, errlen);
    if (found <= 0) return found;
    return text_to_uint64(text, step) ? 0 : 1;
}

int train_resume_state(trainer *t, const run_paths *p) {
    char err[1024];
    uint64_t model_step, opt_step, prev_step;
    int found = file_step(p->model, &model_step, err, sizeof err);
    if (found < 0) return host_error("%s", err);
    if (!found) return host_error("%s has no step in its metadata: not a checkpoint of kiln train", p->model);
    const char *use = p->optimizer;
    int stale_ahead = 0; /* optimizer.safetensors is a step ahead of the weights */
    found = file_step(p->optimizer, &opt_step, err, sizeof err);
    if (found < 0 && access(p->optimizer, F_OK) == 0) return host_error("%s", err);
    if (found <= 0 || opt_step != model_step) {
        /* killed between the two files of a checkpoint: the previous optimizer state is
         * the weights' */
        if (access(p->optimizer_prev, F_OK) == 0 && file_step(p->optimizer_prev, &prev_step, err, sizeof err) == 1 &&
            prev_step == model_step) {
            use = p->optimizer_prev;
            fprintf(stderr, "kiln train: %s is from a checkpoint that was not finished; resuming from %s (step %" PRIu64
                            ")\n", p->optimizer, p->optimizer_prev, model_step);
            stale_ahead = 1;
        } else if (found > 0) {
            return host_error("%s (step %" PRIu64 ") and %s (step %" PRIu64 ") come from different checkpoints",
                              p->model, model_step, p->optimizer, opt_step);
        } else {
            return host_error("%s: no optimizer state of step %" PRIu64 " to resume with", p->optimizer, model_step);
        }
    }
    if (trainer_load_state(t, use, err, sizeof err)) return host_error("%s", err);
    /* Once the weights' state is loaded, the one ahead of them goes: the next checkpoint
     * must not keep it as the previous one, or a kill between its two files would leave no
     * state that matches the weights. */
    if (stale_ahead && train_parallel_leads()) (void)remove(p->optimizer);
    int64_t micros = (int64_t)t->hp.grad_accum * (t->par ? t->par->ranks : 1);
    if (t->resumed_micro_batches != micros && train_parallel_leads())
        fprintf(stderr,
                "kiln train: the run had %" PRId64 " micro-batches per step (--grad-accum x ranks), this one has %" PRId64
                ": from step %" PRId64 " on, each step trains on %.3g times the sequences\n",
                t->resumed_micro_batches, micros, t->step + 1, (double)micros / (double)t->resumed_micro_batches);
    return 0;
}

/* The batch the run recorded in its optimizer state (the previous file when a kill left
 * none): 1 and *batch, 0 when neither file has it. */
static int saved_batch(const run_paths *p, uint64_t *batch) {
    const char *files[] = {p->optimizer, p->optimizer_prev};
    char text[32], err[1024];
    for (int i = 0; i < 2; i++)
        if (model_checkpoint_meta(files[i], "batch", text, sizeof text, err, sizeof err) == 1 &&
            text_to_uint64(text, batch) == 0)
            return 1;
    return 0;
}

void train_resume_batch(const run_paths *p, const cli_opt *opts, int n) {
    static const char *const names[] = {"--batch", "--batch-tokens"};
    uint64_t batch;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const cli_opt *opt = cli_find(opts, n, names[i]);
        if (!opt || opt->seen || opt->kind != CLI_INT || !saved_batch(p, &batch)) continue;
        /* out of the option's range: left as it is, and the resume names the mismatch */
        if ((double)batch >= opt->min && (double)batch <= opt->max) *(int *)opt->target = (int)batch;
    }
}
