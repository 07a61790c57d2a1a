/* One block's forward pass, for training (all positions, recorded on the tape) and for
 * decoding (new positions only, attending over a KV cache): norm placement, residual
 * scheme, attention (temperature, RealFormer) or GAU, sigma-reparam (block.h). */
#include <math.h>
#include <stdlib.h>

#include "model/block.h"

/* Dropout only where it does something: in evaluation the op is not even recorded. */
static kiln_tensor *maybe_dropout(kiln_tensor *x, float p) {
    if (!x || p <= 0.0f || !kiln_training(x->ctx)) return x;
    return kiln_dropout(x, p);
}

/* The weight a linear uses: W, or (gamma / sigma(W)) W under sigma-reparam. */
static kiln_tensor *linear_weight(const block_config *c, const block_weights *w, block_linear l) {
    kiln_tensor *W = w->w[block_linear_slot(l)];
    if (!c->o.sigma_reparam) return W;
    return kiln_mul(W, kiln_div(w->w[BLOCK_SIGMA_GAMMA + l], block_sigma(w, l)));
}

/* A linear held in parts of different block formats (block_weights' qpart): one product per
 * part with its slice of the bias, joined along the last axis. */
static kiln_tensor *linear_parts(kiln_qmatrix *const *part, kiln_tensor *bias, kiln_tensor *x) {
    kiln_tensor *y[BLOCK_QPARTS];
    int n = 0;
    for (int64_t at = 0; n < BLOCK_QPARTS && part[n]; n++) {
        int64_t rows = kiln_qmatrix_rows(part[n]);
        y[n] = kiln_matmul_q(x, part[n], bias ? kiln_slice(bias, -1, at, rows) : NULL);
        at += rows;
    }
    return kiln_concat(y, n, -1);
}

/* The base's product x W + b, quantized or not. */
static kiln_tensor *base_linear(const block_config *c, const block_weights *w, block_linear l, kiln_tensor *x) {
    /* each linear's bias slot follows its weight's */
    int slot = block_linear_slot(l);
    if (w->q[slot]) return kiln_matmul_q(x, w->q[slot], w->w[slot + 1]);
    if (w->qpart[slot][0]) return linear_parts(w->qpart[slot], w->w[slot + 1], x);
    return kiln_matmul(x, linear_weight(c, w, l), w->w[slot + 1], 0, 0);
}

/* A linear with its LoRA adapters' deltas, when any are attached (model/lora.h). */
static kiln_tensor *linear(const block_config *c, const block_weights *w, block_linear l,
                           kiln_tensor *x) {
    kiln_tensor *y = base_linear(c, w, l, x);
    return w->lora ? lora_block_apply(w->lora, l, 0, x, y) : y;
}

/* Appends the new positions' keys or values [B, T, W] to one layer's cache rows
 * [pos0, pos0 + T) and returns every cached row as [B, Tk, W]. The store is
 * [n_positions, B * W]: row t holds position t of every batch row side by side, so that a
 * step's positions land in whole rows (for B > 1 the fresh [B, T, W] is turned to
 * [T, B * W] on the way in, and the rows back to [B, Tk, W] on the way out, each by one
 * head-split copy; B = 1 needs neither). */
static kiln_tensor *cache_append(kiln_tensor *store, kiln_tensor *fresh, int64_t pos0, int64_t T) {
    if (!fresh) return NULL;
    int64_t B = fresh->shape[0], W = fresh->shape[2];
    if (store->shape[1] != B * W) {
        kiln_set_error(KILN_ERR_SHAPE, "KV cache: rows of %lld values, %lld x %lld needed", (long long)store->shape[1],
                       (long long)B, (long long)W);
        return NULL;
    }
    kiln_tensor *rows = fresh;
    if (B > 1) {
        int64_t as_heads[4] = {1, B, T, W};
        rows = kiln_merge_heads(kiln_reshape(fresh, 4, as_heads)); /* [1, T, B * W] */
    }
    kiln_tensor *slot = kiln_view_rows(store, pos0, T);
    if (!slot || !rows || kiln_copy(slot, rows)) return NULL;
    int64_t shape[3] = {1, pos0 + T, B * W};
    kiln_tensor *all = kiln_reshape(kiln_view_rows(store, 0, pos0 + T), 3, shape);
    if (B == 1) return all;
    int64_t batched[3] = {B, pos0 + T, W};
    return kiln_reshape(kiln_split_heads(all, (int)B), 3, batched); /* [1, B, Tk, W] -> [B, Tk, W] */
}

/* Attention probabilities from scores [B, H, T, Tk] (QK^T, unscaled) at head width d, under
 * the mask in `opts` (causality, key lengths). Self-attention's scores carry RealFormer's
 * residual and the entropy probe; cross-attention's have another shape and take neither. */
static kiln_tensor *attention_probs(const block_config *c, int layer, kiln_tensor *scores,
                                    int64_t d, block_pass *pass, kiln_softmax_opts opts, int self) {
    float scale = 1.0f / sqrtf((float)d);
    opts.scale = scale;
    if (c->o.attn_temperature != 1.0f) opts.temperature = c->o.attn_temperature;
    if (self && c->o.residual_attention) {
        /* RealFormer: the raw scores, before the mask, pass on to the next layer */
        kiln_tensor *raw = kiln_scale(scores, scale);
        if (pass->scores) raw = kiln_add(raw, pass->scores);
        pass->scores = raw;
        scores = raw;
        opts.scale = 1.0f;
    }
    kiln_tensor *p = kiln_softmax(scores, &opts);
    if (self && pass->entropy && p) pass->entropy[layer] = kiln_attention_entropy(p);
    return p;
}

/* Rotary positions of q or k [B, T, heads hd] at positions pos0 + t (kiln_rope on
 * [B, T, heads, hd]). */
static kiln_tensor *rotate(const block_config *c, kiln_tensor *x, int64_t heads, const block_pass *pass) {
    if (!x) return NULL;
    int64_t shape[4] = {x->shape[0], x->shape[1], heads, x->shape[2] / heads};
    kiln_rope_opts opts = {.base = c->o.rope_base, .layout = c->o.rope_layout,
                           .pos0 = pass->pos0, .freq_factors = pass->rope_freqs};
    kiln_tensor *y = kiln_rope(kiln_reshape(x, 4, shape), &opts);
    return y ? kiln_reshape(y, 3, x->shape) : NULL;
}

/* Multi-head attention of queries q [B, T, H hd] over keys k and values v [B, Tk, KVH hd],
 * before the output projection.
 *
 * Fused (kiln_attention: memory linear in the context) when the config asks for it
 * (block_config.attention_fused, a run-time choice) and the layer needs no materialized
 * scores: RealFormer's self-attention passes its scores on, and a pass probing the
 * entropy reads the probabilities; cross-attention takes neither.
 *
 * Unfused, it is composed of ops. Grouped-query attention (KVH < H) never repeats the keys
 * and values: query head h = kv G + g (G = H / KVH) is row block g of [B, KVH, G T, hd], the
 * same memory as [B, H, T, hd], so one batched matmul over [B, KVH] gives every group's
 * scores [B, KVH, G T, Tk], the same memory as the [B, H, T, Tk] the softmax masks (its
 * causal offset Tk - T stays the cache's pos0), and probs @ v gives [B, H, T, hd] back. */
static kiln_tensor *multi_head(const block_config *c, int layer, kiln_tensor *q, kiln_tensor *k,
                               kiln_tensor *v, block_pass *pass, kiln_softmax_opts mask, int self) {
    if (!q || !k || !v) return NULL;
    int64_t H = c->n_head, KVH = k->shape[2] / (q->shape[2] / H), G = H / KVH;
    int64_t B = q->shape[0], T = q->shape[1], Tk = k->shape[1], hd = q->shape[2] / H;
    if (c->attention_fused && !(self && (c->o.residual_attention || pass->entropy))) {
        /* the same function in one op (its dropout draws the mask maybe_dropout would) */
        kiln_attention_opts o = {.n_head = (int)H, .n_kv_head = (int)KVH, .scale = 1.0f / sqrtf((float)hd),
                                 .temperature = c->o.attn_temperature, .causal = mask.causal,
                                 .key_lengths = mask.key_lengths, .dropout = pass->dropout};
        return kiln_attention(q, k, v, &o);
    }
    kiln_tensor *qh = kiln_split_heads(q, (int)H);   /* [B, H, T, hd] */
    kiln_tensor *kh = kiln_split_heads(k, (int)KVH); /* [B, KVH, Tk, hd] */
    kiln_tensor *vh = kiln_split_heads(v, (int)KVH);
    int64_t grouped[4] = {B, KVH, G * T, hd}, per_head[4] = {B, H, T, Tk};
    if (G > 1) qh = kiln_reshape(qh, 4, grouped);
    kiln_tensor *scores = kiln_matmul(qh, kh, NULL, 0, 1); /* [B, KVH, G T, Tk] */
    if (!scores) return NULL;
    if (G > 1) scores = kiln_reshape(scores, 4, per_head);
    kiln_tensor *probs = maybe_dropout(attention_probs(c, layer, scores, hd, pass, mask, self), pass->dropout);
    int64_t grouped_probs[4] = {B, KVH, G * T, Tk}, heads[4] = {B, H, T, hd};
    if (G > 1 && probs) probs = kiln_reshape(probs, 4, grouped_probs);
    kiln_tensor *y = kiln_matmul(probs, vh, NULL, 0, 0); /* [B, KVH, G T, hd] */
    if (G > 1 && y) y = kiln_reshape(y, 4, heads);
    return kiln_merge_heads(y); /* [B, T, H hd] */
}

/* Qwen3's norm of each head of q or k [B, T, heads hd]: RMSNorm over the hd channels with
 * weight [hd], at the model's epsilon. */
static kiln_tensor *head_norm(const block_config *c, kiln_tensor *x, kiln_tensor *weight, int64_t heads) {
    if (!x) return NULL;
    int64_t shape[4] = {x->shape[0], x->shape[1], heads, x->shape[2] / heads};
    kiln_tensor *y = kiln_rmsnorm(kiln_reshape(x, 4, shape), weight, c->ln_eps);
    return y ? kiln_reshape(y, 3, x->shape) : NULL;
}

/* Multi-head self-attention of x [B, T, C]: causal (the causal mask is offset by Tk - T =
 * pos0, so new queries see every cached key), or over every unpadded key when the block is
 * bidirectional. q [B, T, H hd], k and v [B, T, KVH hd] (Qwen3's per-head norm of q and k,
 * then their rotary positions at pos0 + t), and the cache holds KVH hd per position. */
static kiln_tensor *attention(const block_config *c, const block_weights *w, int layer,
                              kiln_tensor *x, block_pass *pass, kiln_tensor *k_store,
                              kiln_tensor *v_store) {
    if (!x) return NULL;
    int64_t T = x->shape[1], H = c->n_head, KVH = block_kv_heads(c), hd = block_head_dim(c);
    kiln_tensor *qkv = linear(c, w, BLOCK_LINEAR_QKV, x); /* [B, T, (H + 2 KVH) hd] */
    kiln_tensor *q = kiln_slice(qkv, -1, 0, H * hd);
    kiln_tensor *k = kiln_slice(qkv, -1, H * hd, KVH * hd);
    kiln_tensor *v = kiln_slice(qkv, -1, (H + KVH) * hd, KVH * hd);
    if (w->lora) { /* the Llama family's q_proj, k_proj and v_proj adapters (model/lora.h) */
        q = lora_block_apply(w->lora, BLOCK_LINEAR_QKV, 0, x, q);
        k = lora_block_apply(w->lora, BLOCK_LINEAR_QKV, H * hd, x, k);
        v = lora_block_apply(w->lora, BLOCK_LINEAR_QKV, (H + KVH) * hd, x, v);
    }
    if (c->o.qk_norm) {
        q = head_norm(c, q, w->w[BLOCK_Q_NORM_W], H);
        k = head_norm(c, k, w->w[BLOCK_K_NORM_W], KVH);
    }
    if (c->o.rope) {
        q = rotate(c, q, H, pass);
        k = rotate(c, k, KVH, pass);
    }
    if (k_store) {
        k = cache_append(k_store, k, pass->pos0, T);
        v = cache_append(v_store, v, pass->pos0, T);
    }
    kiln_softmax_opts mask = {.causal = !c->bidirectional, .key_lengths = pass->key_lengths};
    kiln_tensor *y = multi_head(c, layer, q, k, v, pass, mask, 1);
    return linear(c, w, BLOCK_LINEAR_ATTN_PROJ, y);
}

kiln_tensor *block_cross_kv(const block_config *c, const block_weights *w, kiln_tensor *memory) {
    if (!memory) {
        kiln_set_error(KILN_ERR_ARGUMENT, "cross-attention: no encoder output to attend to");
        return NULL;
    }
    return linear(c, w, BLOCK_LINEAR_CROSS_KV, memory);
}

/* Cross-attention of x [B, T, C] to the encoder's output: queries from x, keys and values
 * from pass->memory (or the decode's precomputed ones), source padding masked. */
static kiln_tensor *cross_attention(const block_config *c, const block_weights *w, int layer,
                                    kiln_tensor *x, block_pass *pass) {
    if (!x) return NULL;
    int64_t C = c->n_embd;
    kiln_tensor *kv = pass->cross_kv && pass->cross_kv[layer] ? pass->cross_kv[layer]
                                                              : block_cross_kv(c, w, pass->memory);
    kiln_tensor *q = linear(c, w, BLOCK_LINEAR_CROSS_Q, x);
    kiln_softmax_opts mask = {.key_lengths = pass->memory_lengths};
    kiln_tensor *y = multi_head(c, layer, q, kiln_slice(kv, -1, 0, C), kiln_slice(kv, -1, C, C), pass, mask, 0);
    return linear(c, w, BLOCK_LINEAR_CROSS_PROJ, y);
}

/* SwiGLU's silu(gate) * up [B, T, F], c_fc = [gate | up] (F columns each), from the
 * engine's ops (docs/design.md, "SwiGLU: engine ops, not a fused op"). When the tape
 * records, gate and up are two products with the weight's column blocks (a copy of C F
 * values per step, not per token), so the step keeps gate, up, silu(gate) and the product
 * (4F per token) and never c_fc's whole output and its two slices (6F); decoding and
 * evaluation keep nothing for a backward and take one product, then its halves. */
static kiln_tensor *swiglu(const block_config *c, const block_weights *w, kiln_tensor *x) {
    int64_t F = block_ffn(c);
    kiln_tensor *W = w->w[BLOCK_FC_W], *b = w->w[BLOCK_FC_B], *gate, *up;
    if (!w->q[BLOCK_FC_W] && !w->qpart[BLOCK_FC_W][0] && W && kiln_grad_enabled(W->ctx) && kiln_requires_grad(W)) {
        W = linear_weight(c, w, BLOCK_LINEAR_FC);
        gate = kiln_matmul(x, kiln_slice(W, -1, 0, F), b ? kiln_slice(b, -1, 0, F) : NULL, 0, 0);
        up = kiln_matmul(x, kiln_slice(W, -1, F, F), b ? kiln_slice(b, -1, F, F) : NULL, 0, 0);
    } else {
        kiln_tensor *h = linear(c, w, BLOCK_LINEAR_FC, x);
        gate = kiln_slice(h, -1, 0, F);
        up = kiln_slice(h, -1, F, F);
    }
    if (w->lora) { /* the gate_proj and up_proj adapters, each on its half (model/lora.h) */
        gate = lora_block_apply(w->lora, BLOCK_LINEAR_FC, 0, x, gate);
        up = lora_block_apply(w->lora, BLOCK_LINEAR_FC, F, x, up);
    }
    return kiln_mul(kiln_silu(gate), up);
}

/* GELU (or the role's activation): c_proj(act(c_fc x)); SwiGLU: c_proj(silu(gate) * up). */
static kiln_tensor *mlp(const block_config *c, const block_weights *w, kiln_tensor *x) {
    kiln_tensor *h = c->o.mlp == BLOCK_MLP_SWIGLU ? swiglu(c, w, x)
                                                  : kiln_activation(linear(c, w, BLOCK_LINEAR_FC, x), c->mlp_act);
    return linear(c, w, BLOCK_LINEAR_MLP_PROJ, h);
}

/* GAU's causal weights [T, Tk]: 1/n for the n keys query i may see (j <= pos0 + i), 0
 * elsewhere. Multiplying relu^2 of the scores by it both masks and averages. */
static kiln_tensor *gau_weights(kiln_ctx *ctx, kiln_dtype dtype, int64_t T, int64_t Tk, int64_t pos0) {
    int64_t shape[2] = {T, Tk};
    kiln_tensor *t = kiln_tensor_temp(ctx, dtype, 2, shape);
    float *host = malloc((size_t)(T * Tk) * sizeof *host);
    if (!t || !host) {
        free(host);
        if (t) kiln_set_error(KILN_ERR_MEMORY, "gau: out of host memory");
        return NULL;
    }
    for (int64_t i = 0; i < T; i++)
        for (int64_t j = 0; j < Tk; j++) host[i * Tk + j] = j <= pos0 + i ? 1.0f / (float)(pos0 + i + 1) : 0.0f;
    kiln_status s = kiln_upload_f32(t, host, T * Tk);
    free(host);
    return s ? NULL : t;
}

/* Q or K from Z [B, T, s]: Z (.) scale[row] + offset[row]. */
static kiln_tensor *scale_offset(const block_weights *w, kiln_tensor *z, int row) {
    int64_t s = z->shape[2];
    kiln_tensor *g = kiln_reshape(kiln_view_rows(w->w[BLOCK_GAU_QK_SCALE], row, 1), 1, &s);
    kiln_tensor *b = kiln_reshape(kiln_view_rows(w->w[BLOCK_GAU_QK_OFFSET], row, 1), 1, &s);
    return kiln_add(kiln_mul(z, g), b);
}

/* The gated attention unit (FLASH): U, V = SiLU(x W_u), SiLU(x W_v) of width e = 2C,
 * Z = SiLU(x W_z) of width s, Q and K from Z, A = relu^2(Q K^T / sqrt(s)) / n (causal) or
 * softmax, O = (U (.) A V) W_o. */
static kiln_tensor *gau(const block_config *c, const block_weights *w, int layer, kiln_tensor *x,
                        block_pass *pass, kiln_tensor *k_store, kiln_tensor *v_store) {
    if (!x) return NULL;
    int64_t E = 2 * (int64_t)c->n_embd, S = c->o.gau_s, T = x->shape[1];
    kiln_tensor *uvz = kiln_silu(linear(c, w, BLOCK_LINEAR_GAU_UVZ, x)); /* [B, T, 2E + S] */
    kiln_tensor *u = kiln_slice(uvz, -1, 0, E);
    kiln_tensor *v = kiln_slice(uvz, -1, E, E);
    kiln_tensor *z = kiln_slice(uvz, -1, 2 * E, S);
    if (!z) return NULL;
    kiln_tensor *q = scale_offset(w, z, 0), *k = scale_offset(w, z, 1);
    if (k_store) {
        k = cache_append(k_store, k, pass->pos0, T);
        v = cache_append(v_store, v, pass->pos0, T);
    }
    kiln_tensor *qh = kiln_split_heads(q, 1), *kh = kiln_split_heads(k, 1), *vh = kiln_split_heads(v, 1);
    kiln_tensor *scores = kiln_matmul(qh, kh, NULL, 0, 1); /* [B, 1, T, Tk] */
    if (!scores) return NULL;
    kiln_tensor *a;
    if (c->o.gau_attn == BLOCK_GAU_SOFTMAX) {
        kiln_softmax_opts mask = {.causal = !c->bidirectional, .key_lengths = pass->key_lengths};
        a = attention_probs(c, layer, scores, S, pass, mask, 1);
    } else {
        int64_t Tk = scores->shape[3];
        if (!pass->gau_weights || pass->gau_weights->shape[0] != T || pass->gau_weights->shape[1] != Tk)
            pass->gau_weights = gau_weights(x->ctx, x->dtype, T, Tk, pass->pos0);
        float scale = 1.0f / (sqrtf((float)S) * c->o.attn_temperature);
        a = kiln_mul(kiln_relu2(kiln_scale(scores, scale)), pass->gau_weights);
    }
    a = maybe_dropout(a, pass->dropout);
    kiln_tensor *av = kiln_merge_heads(kiln_matmul(a, vh, NULL, 0, 0)); /* [B, T, E] */
    return linear(c, w, BLOCK_LINEAR_GAU_O, kiln_mul(u, av));
}

/* Admin's profiling: omega for this sublayer, then the next one's from the variances. */
static double variance(const kiln_tensor *t) {
    int64_t n = kiln_numel(t);
    float *h = malloc((size_t)n * sizeof *h);
    if (!h || kiln_download_f32(t, h, n)) {
        free(h);
        return NAN;
    }
    double sum = 0, sq = 0;
    for (int64_t i = 0; i < n; i++) sum += h[i];
    double mean = sum / (double)n;
    for (int64_t i = 0; i < n; i++) sq += (h[i] - mean) * (h[i] - mean);
    free(h);
    return sq / (double)n;
}

/* A residual sublayer: where its captures go, its LayerNorm and its Admin omega. */
typedef struct sublayer {
    int index;        /* within the block: self-attention (or GAU), cross-attention, MLP */
    block_slot ln;    /* the LayerNorm's weight (its bias follows) */
    block_slot omega; /* Admin's omega */
} sublayer;

static sublayer self_sublayer(void) { return (sublayer){.index = 0, .ln = BLOCK_LN1_W, .omega = BLOCK_ADMIN_OMEGA_1}; }
static sublayer cross_sublayer(void) { return (sublayer){.index = 1, .ln = BLOCK_LNX_W, .omega = BLOCK_ADMIN_OMEGA_X}; }
static sublayer mlp_sublayer(const block_config *c) {
    return (sublayer){.index = c->cross_attention ? 2 : 1, .ln = BLOCK_LN2_W, .omega = BLOCK_ADMIN_OMEGA_2};
}

/* The skip path s(x) of a sublayer. */
static kiln_tensor *skip(const block_config *c, const block_weights *w, sublayer sub, kiln_tensor *x,
                         block_pass *pass) {
    switch (c->o.residual) {
    case BLOCK_RESIDUAL_ADMIN: {
        kiln_tensor *omega = w->w[sub.omega];
        if (pass->admin) {
            block_admin_profile *p = pass->admin;
            if (p->omegas) p->omegas[p->count] = p->ratio;
            p->count++;
            if (kiln_fill(omega, p->ratio)) return NULL;
        }
        return kiln_mul(x, omega);
    }
    case BLOCK_RESIDUAL_DEEPNORM: return kiln_scale(x, c->deepnorm_alpha);
    default: return x;
    }
}

/* One residual sublayer: f = F(input) already computed from the input the norm placement
 * gives it; returns the new stream. */
static kiln_tensor *residual(const block_config *c, const block_weights *w, int layer, sublayer sub,
                             kiln_tensor *x, kiln_tensor *f, block_pass *pass) {
    if (!f) return NULL;
    int capture = layer * block_config_sublayers(c) + sub.index;
    if (pass->branches) pass->branches[capture] = f;
    kiln_tensor *s = skip(c, w, sub, x, pass);
    if (pass->skips) pass->skips[capture] = s;
    if (pass->admin && s) {
        double next = variance(s) + variance(f);
        if (!isfinite(next)) {
            kiln_set_error(KILN_ERR_ARGUMENT, "admin profiling: the variance of layer %d is not finite", layer);
            return NULL;
        }
        pass->admin->ratio = (float)sqrt(next);
    }
    f = maybe_dropout(f, pass->dropout);
    if (c->o.residual == BLOCK_RESIDUAL_REZERO) f = kiln_mul(f, w->w[BLOCK_REZERO_ALPHA]);
    kiln_tensor *y = kiln_add(s, f);
    if (c->o.norm != BLOCK_NORM_POST) return y;
    return block_norm_apply(&c->o, y, w->w[sub.ln], w->w[sub.ln + 1], c->ln_eps);
}

/* The input a sublayer's F sees: LN(x) under Pre-LN, x otherwise. */
static kiln_tensor *sublayer_input(const block_config *c, const block_weights *w, sublayer sub, kiln_tensor *x) {
    if (c->o.norm != BLOCK_NORM_PRE) return x;
    return block_norm_apply(&c->o, x, w->w[sub.ln], w->w[sub.ln + 1], c->ln_eps);
}

kiln_tensor *block_norm_apply(const block_options *o, kiln_tensor *x, kiln_tensor *weight, kiln_tensor *bias,
                              float eps) {
    if (o->norm_type == BLOCK_NORM_TYPE_RMSNORM) return kiln_rmsnorm(x, weight, eps);
    return kiln_layernorm(x, weight, bias, eps);
}

void block_cache_widths(const block_config *c, int64_t *k_width, int64_t *v_width) {
    if (c->o.layer == BLOCK_LAYER_GAU) {
        *k_width = c->o.gau_s;
        *v_width = 2 * (int64_t)c->n_embd;
    } else {
        *k_width = *v_width = (int64_t)block_kv_heads(c) * block_head_dim(c);
    }
}

kiln_tensor *block_forward(const block_config *c, const block_weights *w, int layer,
                           kiln_tensor *x, block_pass *pass, kiln_tensor *k_store,
                           kiln_tensor *v_store) {
    if (!x) return NULL;
    sublayer self = self_sublayer();
    kiln_tensor *a = c->o.layer == BLOCK_LAYER_GAU
                         ? gau(c, w, layer, sublayer_input(c, w, self, x), pass, k_store, v_store)
                         : attention(c, w, layer, sublayer_input(c, w, self, x), pass, k_store, v_store);
    x = residual(c, w, layer, self, x, a, pass);
    if (x && c->cross_attention) {
        sublayer cross = cross_sublayer();
        x = residual(c, w, layer, cross, x, cross_attention(c, w, layer, sublayer_input(c, w, cross, x), pass), pass);
    }
    if (!x || c->o.layer == BLOCK_LAYER_GAU) return x;
    sublayer ffn = mlp_sublayer(c);
    return residual(c, w, layer, ffn, x, mlp(c, w, sublayer_input(c, w, ffn, x)), pass);
}
