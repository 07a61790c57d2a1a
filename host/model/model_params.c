/* A model's parameter table (model_params.h). */
#include "model/model_params.h"

#include <stdlib.h>
#include <string.h>

model_param *model_params_new(kiln_ctx *ctx, const param_spec *specs, int n, int *n_params, int *n_buffers) {
    return model_params_new_except(ctx, specs, n, NULL, n_params, n_buffers);
}

model_param *model_params_new_except(kiln_ctx *ctx, const param_spec *specs, int n, const unsigned char *absent,
                                     int *n_params, int *n_buffers) {
    return model_params_new_typed(ctx, specs, n, absent, KILN_F32, n_params, n_buffers);
}

model_param *model_params_new_typed(kiln_ctx *ctx, const param_spec *specs, int n, const unsigned char *absent,
                                    kiln_dtype dtype, int *n_params, int *n_buffers) {
    model_param *p = calloc((size_t)(n > 0 ? n : 1), sizeof *p);
    if (!p) return NULL;
    *n_params = *n_buffers = 0;
    for (int i = 0; i < n; i++) {
        kiln_tensor *t = NULL;
        kiln_dtype d = specs[i].buffer ? KILN_F32 : dtype; /* buffers stay f32 (model_params_to_half) */
        if (!(absent && absent[i]) && !(t = kiln_tensor_new(ctx, d, specs[i].ndim, specs[i].shape))) {
            model_params_free(p, i);
            return NULL;
        }
        if (t) kiln_set_requires_grad(t, !specs[i].buffer);
        p[i].spec = specs[i];
        p[i].t = t;
        if (specs[i].buffer)
            ++*n_buffers;
        else
            ++*n_params;
    }
    return p;
}

void model_params_free(model_param *p, int n) {
    if (!p) return;
    for (int i = 0; i < n; i++) {
        kiln_tensor_free(p[i].t);
        kiln_tensor_free(p[i].half);
    }
    free(p);
}

kiln_tensor *model_param_compute(const model_param *p) { return p->half ? p->half : p->t; }

/* An f16 tensor of t's shape holding t rounded to f16, or NULL (engine error set). */
static kiln_tensor *half_of(kiln_ctx *ctx, const kiln_tensor *t) {
    kiln_tensor *h = kiln_tensor_new(ctx, KILN_F16, t->ndim, t->shape);
    if (h && kiln_copy(h, t)) {
        kiln_tensor_free(h);
        return NULL;
    }
    return h;
}

kiln_status model_params_to_half(kiln_ctx *ctx, model_param *p, int n_params, int keep_masters) {
    /* every copy first, so a failure (no f16 storage, out of memory) leaves the model whole;
     * the buffers stay f32: the power iteration works on f32 masters */
    kiln_tensor **halves = calloc((size_t)(n_params > 0 ? n_params : 1), sizeof *halves);
    if (!halves) return KILN_ERR_MEMORY;
    for (int i = 0; i < n_params; i++) {
        if (!p[i].t) continue; /* a weight held quantized elsewhere (gpt_quantized) */
        if (!(halves[i] = half_of(ctx, p[i].t))) {
            kiln_status s = kiln_error_status();
            for (int k = 0; k < i; k++) kiln_tensor_free(halves[k]);
            free(halves);
            return s ? s : KILN_ERR_MEMORY;
        }
    }
    for (int i = 0; i < n_params; i++) {
        if (!p[i].t) continue;
        if (keep_masters) {
            /* backward reaches the copies, never the masters: no f32 gradient is kept */
            kiln_set_requires_grad(p[i].t, 0);
            kiln_set_requires_grad(halves[i], 1);
            p[i].half = halves[i];
        } else {
            kiln_set_requires_grad(halves[i], kiln_requires_grad(p[i].t));
            kiln_tensor_free(p[i].t);
            p[i].t = halves[i];
        }
    }
    free(halves);
    return KILN_OK;
}

int64_t model_params_count(const model_param *p, int n_params) {
    int64_t n = 0;
    /* by the specs: a weight held quantized (gpt_quantized) has no tensor here but counts */
    for (int i = 0; i < n_params; i++) {
        const param_spec *s = &p[i].spec;
        n += s->ndim == 2 ? s->shape[0] * s->shape[1] : s->ndim == 1 ? s->shape[0] : 1;
    }
    return n;
}

model_param *model_params_find(model_param *p, int n, const char *name) {
    for (int i = 0; i < n; i++)
        if (!strcmp(p[i].spec.name, name)) return &p[i];
    return NULL;
}

kiln_status model_params_init(const model_param *p, int n_params, uint64_t seed, const model_init *how,
                              const void *model) {
    for (int i = 0; i < n_params; i++) {
        uint64_t stream = MODEL_INIT_STREAM_BASE + (uint64_t)i;
        kiln_status s = p[i].spec.layer >= 0
                            ? block_init_param(how->block_of(model, &p[i].spec), &p[i].spec, p[i].t, seed, stream)
                            : how->own(model, &p[i], seed, stream);
        if (s) return s;
    }
    return KILN_OK;
}

kiln_status model_sigma_init(const block_config *c, block_weights *masters, int n_layers, int first_layer,
                             int n_tensors, int streams_per_layer, uint64_t seed) {
    uint64_t base = MODEL_INIT_STREAM_BASE + (uint64_t)n_tensors;
    for (int l = 0; l < n_layers; l++) {
        kiln_status s = block_sigma_init(c, &masters[l], seed, base + (uint64_t)streams_per_layer * (uint64_t)(first_layer + l),
                                         MODEL_SIGMA_INIT_ITERATIONS);
        if (s) return s;
    }
    return KILN_OK;
}

kiln_status model_params_layer_grad_norms(kiln_ctx *ctx, const model_param *p, int n_params, int L, double unscale,
                                          double *out) {
    kiln_tensor **grads = malloc((size_t)(n_params > 0 ? n_params : 1) * sizeof *grads);
    kiln_tensor **norms = calloc((size_t)L, sizeof *norms);
    float *host = malloc((size_t)L * sizeof *host);
    if (!grads || !norms || !host) {
        free(grads);
        free(norms);
        free(host);
        return kiln_set_error(KILN_ERR_MEMORY, "gradient norms: out of host memory");
    }
    int grad = kiln_grad_enabled(ctx);
    kiln_set_grad_enabled(ctx, 0);
    /* every block's norm on the device first, then one read for all of them */
    int64_t one = 1;
    for (int l = 0; l < L; l++) {
        int n = 0;
        for (int i = 0; i < n_params; i++) {
            kiln_tensor *g = kiln_grad(model_param_compute(&p[i]));
            if (p[i].spec.layer == l && g) grads[n++] = g;
        }
        norms[l] = n ? kiln_reshape(kiln_global_norm(grads, n), 1, &one) : NULL;
    }
    kiln_tensor **present = grads; /* reused: the norms that exist, in layer order */
    int count = 0;
    for (int l = 0; l < L; l++)
        if (norms[l]) present[count++] = norms[l];
    kiln_tensor *all = count ? kiln_concat(present, count, 0) : NULL;
    kiln_status s = !count ? KILN_OK : all ? kiln_download_f32(all, host, count) : kiln_error_status();
    for (int l = 0, k = 0; l < L && !s; l++) out[l] = norms[l] ? (double)host[k++] / unscale : 0.0;
    kiln_set_grad_enabled(ctx, grad);
    free(grads);
    free(norms);
    free(host);
    return s;
}
