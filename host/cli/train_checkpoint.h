/* A training run's checkpoint files in its --out directory, and why a kill at any moment
 * leaves a pair that resumes.
 *
 * A checkpoint is two files, each replaced atomically (kiln/file.h: a temporary file, fsync,
 * rename): optimizer.safetensors (Adam's moments, the step, the RNG stream, the loss scale),
 * then model.safetensors (the weights). A process killed between the two renames would
 * leave an optimizer state one checkpoint ahead of the weights; so, as the optimizer file is
 * replaced, the current one is kept as optimizer.prev.safetensors (kiln/file.h's
 * keep-previous mode: a hard link, itself put in place by a rename), and resuming takes
 * whichever of the two has the weights' step (and removes an optimizer file that is ahead of
 * the weights, which the next checkpoint would otherwise keep as the previous one). */
#ifndef KILN_HOST_CLI_TRAIN_CHECKPOINT_H
#define KILN_HOST_CLI_TRAIN_CHECKPOINT_H

#include <stddef.h>

#include "model/trainer.h"
#include "run/cli.h"

/* Where the run keeps its checkpoint: `model` is the trained weights' file, the model's
 * (model.safetensors) or a LoRA run's adapter (adapter_model.safetensors, beside
 * adapter_config.json); either holds the step in its metadata. */
typedef struct run_paths {
    char model[4096], optimizer[4096], optimizer_prev[4096];
} run_paths;

/* The paths in the directory `out` (lora: a LoRA run's). Returns 0, or 1 with the error
 * printed (too long). */
int run_paths_init(run_paths *p, const char *out, int lora);

/* Removes the temporary files a killed run left in `out` (each writer's "<file>.tmp..."):
 * a run opening its directory calls it, as the only writer there. */
void train_remove_stale_temporaries(const char *out);

/* Writes the optimizer state of step t->step, keeping the current file as the previous
 * one first. Returns 0, or -1 with a message in err. The model's file is written after. */
int train_save_optimizer(const trainer *t, const run_paths *p, char *err, size_t errlen);

/* Restores the optimizer state of a resumed run: the optimizer file, or the previous one,
 * whose step is the model file's. Returns 0, or 1 with the error printed. */
int train_resume_state(trainer *t, const run_paths *p);

/* A resumed run's batch (--batch, or seq2seq's --batch-tokens) when the command line does
 * not give it: the one its optimizer state recorded, as the layers, width and tokenizer
 * come from its model file. A --batch given and different is refused by the resume. */
void train_resume_batch(const run_paths *p, const cli_opt *opts, int n);

#endif
