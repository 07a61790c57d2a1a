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

/* One download per layer of the step's entropy tensors. */
static kiln_status entropy_read(kiln_tensor *const *entropy, int L, double *per_layer, double *lowest) {
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

kiln_status model_entropy_probe(kiln_ctx *ctx, int L, model_probe_forward forward, void *self, double *per_layer,
                                double *lowest) {
    *lowest = NAN;
    kiln_tensor **entropy = calloc((size_t)(L > 0 ? L : 1), sizeof *entropy);
    if (!entropy) return kiln_set_error(KILN_ERR_MEMORY, "attention entropy: out of host memory");
    model_eval_mode e = model_eval_mode_enter(ctx);
    kiln_status s = forward(self, entropy);
    if (!s) s = entropy_read(entropy, L, per_layer, lowest);
    model_eval_mode_leave(ctx, e);
    kiln_step_reset(ctx);
    free(entropy);
    return s;
}
