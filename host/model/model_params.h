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
/* The same with the trained weights in dtype: KILN_F16 makes the table model_params_to_half
 * leaves without masters (eval, decode), without an f32 copy on the way, for a loader that
 * converts each weight as it reads it. */
model_param *model_params_new_typed(kiln_ctx *ctx, const param_spec *specs, int n, const unsigned char *absent,
                                    kiln_dtype dtype, int *n_params, int *n_buffers);
/* Frees every tensor and the table (n = trained + buffers). */
void model_params_free(model_param *p, int n);

/* The tensor the forward pass reads: the f16 copy in mixed-precision training, else the
 * weight. It is also where backward's gradients land. */
kiln_tensor *model_param_compute(const model_param *p);

/* Turns the n_params trained weights to f16 (gpt/gpt.h's gpt_set_precision explains the two
 * modes): with keep_masters each gets an f16 copy that requires grad, else the f32 weight
 * is replaced. Every copy is made first, so a failure leaves the table whole. */
kiln_status model_params_to_half(kiln_ctx *ctx, model_param *p, int n_params, int keep_masters);

/* Init of a model's table. Tensor i draws its random numbers from stream
 * MODEL_INIT_STREAM_BASE + i, far above the streams dropout draws (the context counts those
 * up from 0), so an init never reuses a dropout mask's random numbers. */
#define MODEL_INIT_STREAM_BASE ((uint64_t)1 << 40)

/* How a kind initializes its table: `block_of` names the config of the block a block tensor
 * (spec.layer >= 0) belongs to, which block_init_param follows; `own` sets each of the
 * kind's own tensors (embeddings, final norms, heads). `model` is the kind's model. */
typedef struct model_init {
    const block_config *(*block_of)(const void *model, const param_spec *spec);
    kiln_status (*own)(const void *model, const model_param *p, uint64_t seed, uint64_t stream);
} model_init;

/* Initializes the n_params trained tensors of the table, each from its own stream. */
kiln_status model_params_init(const model_param *p, int n_params, uint64_t seed, const model_init *how,
                              const void *model);

/* sigma-reparam's u and v at init, for n_layers layers of one block config numbered from
 * first_layer: layer l draws from the streams past every one of the table's n_tensors
 * (trained and buffers), streams_per_layer apart, and runs MODEL_SIGMA_INIT_ITERATIONS
 * steps of the power iteration, enough for u^T W v to settle on the top singular value of a
 * random matrix (the gap between the top two closes slowly). */
#define MODEL_SIGMA_INIT_ITERATIONS 30
kiln_status model_sigma_init(const block_config *c, block_weights *masters, int n_layers, int first_layer,
                             int n_tensors, int streams_per_layer, uint64_t seed);

/* The global norm of each layer's gradients as they stand (after backward; the gradients
 * of the tensors with spec.layer l, on model_param_compute) divided by `unscale` (the loss
 * scale in mixed precision, else 1): out[L]. */
kiln_status model_params_layer_grad_norms(kiln_ctx *ctx, const model_param *p, int n_params, int L, double unscale,
                                          double *out);

/* Elements of the n_params trained weights. */
int64_t model_params_count(const model_param *p, int n_params);
/* The entry with this checkpoint name among n, or NULL. */
model_param *model_params_find(model_param *p, int n, const char *name);

#endif
