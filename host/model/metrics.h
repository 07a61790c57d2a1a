/* DIR/metrics.jsonl: one JSON object per logged training step, e.g.
 *   {"step": 250, "loss": 2.0812, "val_loss": 2.0953, "lr": 0.00093, "grad_norm": 0.41,
 *    "tokens_per_s": 18342}
 * val_loss appears only on the steps that evaluated. Mixed-precision (fp16) runs add
 * "loss_scale" (S after the step's update) and "skipped_steps" (overflowing steps skipped
 * so far, cumulative); a skipped step's grad_norm is null. Steps that evaluated add the
 * monitoring (every kind of model: cli/train_monitor.h): "attn_entropy" (one value per
 * layer: the mean over heads and queries of -sum p log p on a validation batch; null for a
 * layer without softmax attention), "attn_entropy_min" (the lowest head's) and
 * "grad_norm_layers" (the gradient norm of each block's parameters at that step); a
 * seq2seq model's layers are its encoder's then its decoder's. A BERT's evaluations add "mlm_accuracy": the
 * fraction of held-out masked positions whose most likely token is the original one. Steps
 * that evaluated also add the memory: "host_rss_bytes" (the process's resident set) and
 * "device_bytes" (what the engine holds on the device: tensors and the step arena), flat
 * after warm-up in a run without leaks (docs/benchmarks.md, "Soak"). */
#ifndef KILN_HOST_MODEL_METRICS_H
#define KILN_HOST_MODEL_METRICS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct metrics_row {
    int64_t step;
    double loss, val_loss; /* val_loss NaN: not evaluated at this step */
    double lr, grad_norm, tokens_per_s;
    double loss_scale;     /* NaN: not written (fp32) */
    int64_t skipped_steps; /* < 0: not written (fp32) */
    int n_layers;                   /* entries of the lists below */
    const double *attn_entropy;     /* NULL: not written */
    double attn_entropy_min;        /* written with attn_entropy */
    const double *grad_norm_layers; /* NULL: not written */
    const double *mlm_accuracy;     /* NULL: not written (a BERT's evaluations write it) */
    int64_t host_rss_bytes, device_bytes; /* < 0: not written */
} metrics_row;

/* The process's resident set in bytes (Linux: /proc/self/statm), or -1 where unknown. */
int64_t metrics_process_rss(void);

/* Opens DIR/metrics.jsonl. A fresh run (resume_step < 0) starts an empty file; a resumed
 * run keeps the rows up to resume_step and drops any later ones (steps the interrupted run
 * logged after its last checkpoint, which the resumed run will log again). Returns NULL
 * with a message in err. */
FILE *metrics_open(const char *dir, int64_t resume_step, char *err, size_t errlen);

/* Appends one row and flushes (a crash loses nothing logged). Returns 0 or -1. */
int metrics_write(FILE *f, const metrics_row *row);
/* Puts what was appended on disk (fsync): after the row of a step that saved a checkpoint,
 * so that a power cut cannot leave a checkpoint newer than its log. Returns 0 or -1. */
int metrics_sync(FILE *f);

#endif
