/* The evaluation loop shared by `kiln eval` and training's val loss (see eval_loss.h). */
#include <stdio.h>
#include <stdlib.h>

#include "model/gpt/eval_loss.h"

/* eval_loss_share, telling `watch` (NULL: none) after each forward pass. */
static int share_watched(gpt_model *m, const data_set *ds, int split, int block, int batch, int64_t max_windows,
                         int share, int shares, const eval_watch *watch, double *loss_sum, int64_t *windows,
                         char *err, size_t errlen) {
    kiln_ctx *ctx = m->ctx;
    int64_t total = data_windows(ds, split, block);
    if (total <= 0) {
        snprintf(err, errlen, "the %s data has no full window of %d tokens (it needs at least %d)",
                 split == DATA_VAL ? "validation" : "training", block, block + 1);
        return -1;
    }
    int64_t count = max_windows > 0 && max_windows < total ? max_windows : total;
    int32_t *x = malloc((size_t)batch * (size_t)block * sizeof *x);
    int32_t *y = malloc((size_t)batch * (size_t)block * sizeof *y);
    if (!x || !y) {
        free(x);
        free(y);
        snprintf(err, errlen, "out of host memory");
        return -1;
    }
    int grad = kiln_grad_enabled(ctx), training = kiln_training(ctx);
    uint64_t stream = kiln_rng_stream(ctx);
    kiln_set_grad_enabled(ctx, 0);
    kiln_set_training(ctx, 0);
    double sum = 0.0;
    int rc = 0;
    for (int64_t first = (int64_t)share * batch; first < count && rc == 0; first += (int64_t)shares * batch) {
        int rows = (int)(count - first < batch ? count - first : batch);
        for (int r = 0; r < rows && rc == 0; r++) {
            /* window index spread evenly over the split when evaluating a subset */
            int64_t w = (first + r) * total / count;
            rc = data_window(ds, split, block, w, x + (size_t)r * block, y + (size_t)r * block,
                             err, errlen);
        }
        if (rc) break;
        int64_t shape[2] = {rows, block};
        kiln_tensor *ids = kiln_tensor_temp(ctx, KILN_I32, 2, shape);
        kiln_tensor *targets = kiln_tensor_temp(ctx, KILN_I32, 2, shape);
        size_t bytes = (size_t)rows * (size_t)block * sizeof *x;
        float value = 0.0f;
        if (!ids || !targets || kiln_upload(ids, x, bytes) || kiln_upload(targets, y, bytes) ||
            kiln_read_scalar(gpt_loss(m, ids, targets, 0.0f, NULL), &value)) {
            snprintf(err, errlen, "evaluation: %s", kiln_error_message());
            rc = -1;
        }
        /* every window has `block` targets, so the mean over tokens is the mean over
         * windows weighted by their count */
        sum += (double)value * rows;
        kiln_step_reset(ctx);
        if (rc == 0) eval_watch_tell(watch, first + rows, count);
    }
    kiln_set_grad_enabled(ctx, grad);
    kiln_set_training(ctx, training);
    kiln_set_rng_stream(ctx, stream);
    free(x);
    free(y);
    *loss_sum = sum;
    *windows = count;
    return rc;
}

int eval_loss_share(gpt_model *m, const data_set *ds, int split, int block, int batch, int64_t max_windows,
                    int share, int shares, double *loss_sum, int64_t *windows, char *err, size_t errlen) {
    return share_watched(m, ds, split, block, batch, max_windows, share, shares, NULL, loss_sum, windows, err,
                         errlen);
}

static int mean_loss(gpt_model *m, const data_set *ds, int split, int block, int batch, int64_t max_windows,
                     const eval_watch *watch, double *loss, char *err, size_t errlen) {
    double sum;
    int64_t windows;
    if (share_watched(m, ds, split, block, batch, max_windows, 0, 1, watch, &sum, &windows, err, errlen)) return -1;
    *loss = sum / (double)windows;
    return 0;
}

int eval_loss_watched(gpt_model *m, const data_set *ds, int split, int block, int batch, const eval_watch *watch,
                      double *loss, char *err, size_t errlen) {
    return mean_loss(m, ds, split, block, batch, 0, watch, loss, err, errlen);
}

int eval_loss(gpt_model *m, const data_set *ds, int split, int block, int batch,
              int64_t max_windows, double *loss, char *err, size_t errlen) {
    return mean_loss(m, ds, split, block, batch, max_windows, NULL, loss, err, errlen);
}
