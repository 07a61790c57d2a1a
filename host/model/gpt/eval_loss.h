/* Evaluation: the mean cross-entropy of a model over consecutive, non-overlapping windows
 * of a data split (only full windows). Used by `kiln eval` and by training's val loss. */
#ifndef KILN_HOST_MODEL_EVAL_LOSS_H
#define KILN_HOST_MODEL_EVAL_LOSS_H

#include <stddef.h>
#include <stdint.h>

#include "formats/data.h"
#include "model/eval_watch.h"
#include "model/gpt/gpt.h"

/* Windows of `block` inputs, `batch` windows per forward pass. max_windows > 0 evaluates
 * that many windows spread evenly over the split (a quick estimate during training);
 * 0 evaluates them all. Runs without grad and without dropout, leaves the context's grad
 * and training modes and its RNG stream as it found them, and frees the activations.
 * Returns 0 and *loss, or -1 with a message. */
int eval_loss(gpt_model *m, const data_set *ds, int split, int block, int batch,
              int64_t max_windows, double *loss, char *err, size_t errlen);

/* eval_loss over all windows, telling `watch` after each forward pass (the windows done). */
int eval_loss_watched(gpt_model *m, const data_set *ds, int split, int block, int batch, const eval_watch *watch,
                      double *loss, char *err, size_t errlen);

/* One share of that evaluation, for data-parallel ranks: the forward passes (batches of
 * `batch` windows) numbered share, share + shares, ... Returns 0 with the sum of their
 * windows' mean losses in *sum and the windows of the whole evaluation in *windows (the
 * ranks' sums added up, over *windows, give eval_loss's result), or -1 with a message. */
int eval_loss_share(gpt_model *m, const data_set *ds, int split, int block, int batch, int64_t max_windows,
                    int share, int shares, double *sum, int64_t *windows, char *err, size_t errlen);

#endif
