/* How a block's tensors start: GPT-2's init, DeepNorm's scaled Xavier init, and
 * sigma-reparam's power iteration (block.h). */
#include <math.h>
#include <stdlib.h>

#include "model/block.h"

/* DeepNorm: Xavier-normal, std = gain sqrt(2 / (fan_in + fan_out)), per column group of a
 * fused matrix: each of q, k, v is its own matrix (C x C for GPT-2; gain 1, 1, beta); GAU's U and V get
 * beta, its Z (which makes Q and K) gain 1. */
static float deepnorm_std(const block_config *c, block_slot slot, int64_t col) {
    double C = c->n_embd, E = 2.0 * C, S = c->o.gau_s, beta = c->deepnorm_beta;
    int64_t q_cols = (int64_t)c->n_head * block_head_dim(c), kv_cols = (int64_t)block_kv_heads(c) * block_head_dim(c);
    switch (slot) {
    case BLOCK_QKV_W: /* q [C, H hd], k and v [C, KVH hd] each */
        return (float)(col >= q_cols + kv_cols ? beta * sqrt(2.0 / (C + (double)kv_cols))
                                               : sqrt(2.0 / (C + (double)(col < q_cols ? q_cols : kv_cols))));
    case BLOCK_GAU_UVZ_W:
        return (float)(col >= 2 * (int64_t)E ? sqrt(2.0 / (C + S)) : beta * sqrt(2.0 / (C + E)));
    case BLOCK_XQ_W: return (float)sqrt(2.0 / (C + C));
    case BLOCK_XKV_W: return (float)((col >= c->n_embd ? beta : 1.0) * sqrt(2.0 / (C + C)));
    default: return 0.0f;
    }
}

/* Xavier-normal with a std per column, drawn as kiln_init_normal draws (element i from
 * (seed, stream, i)). */
static kiln_status fill_columns(const block_config *c, block_slot slot, kiln_tensor *t,
                                uint64_t seed, uint64_t stream) {
    int64_t rows = t->shape[0], cols = t->shape[1], n = rows * cols;
    float *host = malloc((size_t)n * sizeof *host);
    if (!host) return kiln_set_error(KILN_ERR_MEMORY, "block init: out of host memory");
    for (int64_t i = 0; i < n; i++)
        host[i] = kiln_rng_normal(seed, stream, (uint64_t)i) * deepnorm_std(c, slot, i % cols);
    kiln_status s = kiln_upload_f32(t, host, n);
    free(host);
    return s;
}

kiln_status block_init_param(const block_config *c, const param_spec *spec, kiln_tensor *t,
                             uint64_t seed, uint64_t stream) {
    const float std = 0.02f;
    /* DeepNorm's init is Xavier scaled by beta; plain Xavier is the same with beta = 1 */
    int deepnorm = c->o.residual == BLOCK_RESIDUAL_DEEPNORM || c->xavier_init;
    block_slot slot = (block_slot)spec->slot;
    switch (slot) {
    case BLOCK_LN1_W: case BLOCK_LN2_W: case BLOCK_LNX_W:
    case BLOCK_ADMIN_OMEGA_1: case BLOCK_ADMIN_OMEGA_2: case BLOCK_ADMIN_OMEGA_X:
    case BLOCK_Q_NORM_W: case BLOCK_K_NORM_W:
        return kiln_fill(t, 1.0f);
    case BLOCK_QKV_W: case BLOCK_GAU_UVZ_W: case BLOCK_XQ_W: case BLOCK_XKV_W:
        return deepnorm ? fill_columns(c, slot, t, seed, stream) : kiln_init_normal(t, seed, stream, 0.0f, std);
    case BLOCK_FC_W: case BLOCK_ATTN_PROJ_W: case BLOCK_MLP_PROJ_W: case BLOCK_GAU_O_W: case BLOCK_XPROJ_W: {
        if (deepnorm) {
            double fan = (double)(t->shape[0] + t->shape[1]);
            return kiln_init_normal(t, seed, stream, 0.0f, (float)(c->deepnorm_beta * sqrt(2.0 / fan)));
        }
        int residual_proj = slot != BLOCK_FC_W;
        return kiln_init_normal(t, seed, stream, 0.0f, residual_proj ? c->proj_std : std);
    }
    case BLOCK_GAU_QK_SCALE:
        /* FLASH draws the per-dimension scales near zero: Q and K, and so the attention,
         * start small, and the unit starts close to the identity around its residual */
        return kiln_init_normal(t, seed, stream, 0.0f, std);
    default:
        /* biases, offsets, ReZero's alpha; sigma-reparam's tensors come from block_sigma_init */
        return kiln_fill(t, 0.0f);
    }
}

/* ---- sigma-reparam ---- */

static int linear_present(const block_weights *w, int l) {
    return w->w[block_linear_slot((block_linear)l)] && w->w[BLOCK_SIGMA_U + l];
}

/* The context of the block's sigma-reparam buffers, or NULL when it has none. */
static kiln_ctx *sigma_ctx(const block_weights *m) {
    for (int l = 0; l < BLOCK_LINEAR_COUNT; l++)
        if (linear_present(m, l)) return m->w[BLOCK_SIGMA_U + l]->ctx;
    return NULL;
}

kiln_tensor *block_sigma(const block_weights *w, block_linear l) {
    kiln_tensor *W = w->w[block_linear_slot(l)], *u = w->w[BLOCK_SIGMA_U + l], *v = w->w[BLOCK_SIGMA_V + l];
    if (!W || !u || !v) {
        kiln_set_error(KILN_ERR_ARGUMENT, "sigma-reparam: linear %d has no weights", (int)l);
        return NULL;
    }
    int64_t in = W->shape[0], out = W->shape[1];
    int64_t row[2] = {1, in}, col[2] = {out, 1}, one[1] = {1};
    /* u and v are f32 buffers; an f16 model's weight multiplies their f16 casts */
    kiln_tensor *ut = kiln_cast(kiln_reshape(u, 2, row), W->dtype);
    kiln_tensor *vt = kiln_cast(kiln_reshape(v, 2, col), W->dtype);
    kiln_tensor *s = kiln_matmul(ut, kiln_matmul(W, vt, NULL, 0, 0), NULL, 0, 0); /* [1, 1] */
    return s ? kiln_reshape(s, 1, one) : NULL;
}

/* u <- W v / |W v|, v <- W^T u / |W^T u| on one linear's f32 master, not recorded. */
static kiln_status iterate_one(block_weights *m, int l) {
    kiln_tensor *W = m->w[block_linear_slot((block_linear)l)], *u = m->w[BLOCK_SIGMA_U + l],
                *v = m->w[BLOCK_SIGMA_V + l];
    int64_t in = W->shape[0], out = W->shape[1], col_in[2] = {in, 1}, col_out[2] = {out, 1};
    kiln_tensor *wv = kiln_matmul(W, kiln_reshape(v, 2, col_out), NULL, 0, 0);
    kiln_tensor *u_new = kiln_div(wv, kiln_global_norm(&wv, 1));
    if (!u_new || kiln_copy(u, kiln_reshape(u_new, 1, &in))) return kiln_error_status();
    kiln_tensor *wtu = kiln_matmul(W, kiln_reshape(u, 2, col_in), NULL, 1, 0);
    kiln_tensor *v_new = kiln_div(wtu, kiln_global_norm(&wtu, 1));
    if (!v_new || kiln_copy(v, kiln_reshape(v_new, 1, &out))) return kiln_error_status();
    return KILN_OK;
}

kiln_status block_sigma_step(const block_config *c, block_weights *masters, int n_layers) {
    if (!c->o.sigma_reparam) return KILN_OK;
    for (int l = 0; l < n_layers; l++) {
        kiln_status s = block_sigma_iterate(c, &masters[l]);
        if (s) return s;
    }
    return KILN_OK;
}

kiln_status block_sigma_iterate(const block_config *c, block_weights *m) {
    (void)c;
    kiln_ctx *ctx = sigma_ctx(m);
    if (!ctx) return KILN_OK;
    int grad = kiln_grad_enabled(ctx);
    kiln_set_grad_enabled(ctx, 0);
    kiln_status s = KILN_OK;
    for (int l = 0; l < BLOCK_LINEAR_COUNT && !s; l++)
        if (linear_present(m, l)) s = iterate_one(m, l);
    kiln_set_grad_enabled(ctx, grad);
    return s;
}

kiln_status block_sigma_init(const block_config *c, block_weights *m, uint64_t seed, uint64_t stream,
                             int iterations) {
    kiln_status s = KILN_OK;
    for (int l = 0; l < BLOCK_LINEAR_COUNT && !s; l++) {
        if (!linear_present(m, l)) continue;
        /* a random start: the power iteration then finds the top singular pair */
        kiln_tensor *u = m->w[BLOCK_SIGMA_U + l], *v = m->w[BLOCK_SIGMA_V + l];
        if ((s = kiln_init_normal(u, seed, stream + 2 * (uint64_t)l, 0.0f, 1.0f)) ||
            (s = kiln_init_normal(v, seed, stream + 2 * (uint64_t)l + 1, 0.0f, 1.0f)))
            return s;
    }
    kiln_ctx *ctx = sigma_ctx(m);
    if (!ctx) return KILN_OK;
    for (int i = 0; i < iterations && !s; i++) {
        s = block_sigma_iterate(c, m);
        kiln_step_reset(ctx); /* init time: nothing else lives in the arena */
    }
    int grad = kiln_grad_enabled(ctx);
    kiln_set_grad_enabled(ctx, 0);
    for (int l = 0; l < BLOCK_LINEAR_COUNT && !s; l++) {
        if (!linear_present(m, l)) continue;
        kiln_tensor *sigma = block_sigma(m, (block_linear)l);
        if (!sigma || kiln_copy(m->w[BLOCK_SIGMA_GAMMA + l], sigma)) s = kiln_error_status();
    }
    kiln_set_grad_enabled(ctx, grad);
    kiln_step_reset(ctx);
    return s;
}
