/* The monitoring's shared parts (model_monitor.h). */
#include "model/model_monitor.h"

#include <math.h>
#include <stdlib.h>

model_eval_mode model_eval_mode_enter(kiln_ctx *ctx) {
    model_eval_mode e = {.grad = kiln_grad_enabled(ctx), .training = kiln_training(ctx)};
    kiln_set_grad_enabled(ctx, 0);
    kiln_set_training(ctx, 0);
    return e;
}

void model_eval_mode_leave(kiln_ctx *ctx, model_eval_mode e) {
    kiln_set_grad_enabled(ctx, e.grad);
    kiln_set_training(ctx, e.training);
}

kiln_status model_entropy_read(kiln_tensor *const *entropy, int L, double *per_layer, double *lowest) {
    *lowest = NAN;
    kiln_status s = KILN_OK;
    for (int l = 0; l < L && !s; l++) {
        per_layer[l] = NAN;
        if (!entropy[l]) continue; /* no softmax attention in this layer */
        int64_t h = kiln_numel(entropy[l]);
        float *heads = malloc((size_t)(h > 0 ? h : 1) * sizeof *heads);
        if (!heads) return kiln_set_error(KILN_ERR_MEMORY, "attention entropy: out of host memory");
        if (!(s = kiln_download_f32(entropy[l], heads, h))) {
            double sum = 0;
            for (int64_t i = 0; i < h; i++) {
                sum += heads[i];
                if (isnan(*lowest) || heads[i] < *lowest) *lowest = heads[i];
            }
            per_layer[l] = sum / (double)h;
        }
        free(heads);
    }
    return s;
}
