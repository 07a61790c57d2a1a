/* The parameters of a model as one table, whatever the model (GPT, seq2seq, BERT): each
 * tensor with its checkpoint spec (model/block.h's param_spec), the trained ones first and
 * then the buffers, and the f16 working copies of mixed-precision training. The models
 * keep their own handles into the table; what works on the table alone lives here. */
#ifndef KILN_HOST_MODEL_MODEL_PARAMS_H
#define KILN_HOST_MODEL_MODEL_PARAMS_H

#include "kiln/kiln.h"
#include "model/block.h"

typedef struct model_param {
    param_spec spec;
    kiln_tensor *t;    /* the weight: f32 (the master in mixed-precision training) */
    kiln_tensor *half; /* its f16 working copy in mixed-precision training, else NULL */
} model_param;

/* Allocates one zero-filled f32 tensor per spec (trained ones requiring grad) into a new
 * table of n entries; the specs must list the buffers last. Counts them into *n_params and
 * *n_buffers. NULL on error (engine message set, or out of memory). */
model_param *model_params_new(kiln_ctx *ctx, const param_spec *specs, int n, int *n_params, int *n_buffers);
/* The same, leaving spec i without a tensor (t NULL) where absent[i] is set: the weights a
 * quantized model keeps in blocks instead, never allocated as f32 (absent may be NULL). */
model_param *model_params_new_except(kiln_ctx *ctx, const param_spec *specs, int n, const unsigned char *absent,
                                     int *n_params, int *n_buffers);
/* Frees every tensor and the table (n = trained + buffers). */
void model_params_free(model_param *p, int n);

/* The tensor the forward pass reads: the f16 copy in mixed-precision training, else the
 * weight. It is also where backward's gradients land. */
kiln_tensor *model_param_compute(const model_param *p);

/* Turns the n_params trained weights to f16 (model.h's gpt_set_precision explains the two
 * modes): with keep_masters each gets an f16 copy that requires grad, else the f32 weight
 * is replaced. Every copy is made first, so a failure leaves the table whole. */
kiln_status model_params_to_half(kiln_ctx *ctx, model_param *p, int n_params, int keep_masters);

/* Elements of the n_params trained weights. */
int64_t model_params_count(const model_param *p, int n_params);
/* The entry with this checkpoint name among n, or NULL. */
model_param *model_params_find(model_param *p, int n, const char *name);

#endif
