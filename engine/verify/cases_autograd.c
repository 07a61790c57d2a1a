/* The verification cases of composites through the tape: an MLP and an attention block
 * (kiln/verify.h): run by `kiln verify` and by tests/test_autograd.c. */
#include <math.h>

#include "kiln/kiln.h"
#include "verify/cases.h"

/* ---- composites, checked by the case table ---- */

/* in: x [N, C], W1 [C, H], b1 [H], W2 [H, V], b2 [V], targets [N] (some ignored). */
static kiln_tensor *build_mlp(kiln_tensor **in, const void *param) {
    (void)param;
    kiln_tensor *h = kiln_gelu(kiln_matmul(in[0], in[1], in[2], 0, 0));
    kiln_tensor *logits = kiln_matmul(h, in[3], in[4], 0, 0);
    return kiln_cross_entropy(logits, in[5], 0.1f, -1);
}

/* The parameters of a linear layer packed as one [C_in + 1, C_out] tensor, the bias as the
 * last row (the case table has room for 6 inputs): the layer reads them through views, so
 * this also checks that views route their gradients into the base. */
static kiln_tensor *linear_packed(kiln_tensor *x, kiln_tensor *packed) {
    int64_t c_in = packed->shape[0] - 1, c_out = packed->shape[1];
    kiln_tensor *w = kiln_view_rows(packed, 0, c_in);
    kiln_tensor *b = kiln_reshape(kiln_view_rows(packed, c_in, 1), 1, &c_out);
    return kiln_matmul(x, w, b, 0, 0);
}

enum { ATT_HEADS = 2 };

/* in: x [B, T, C], ln [2, C] (weight; bias), qkv [C + 1, 3C], proj [C + 1, C],
 * key lengths [B]. A pre-norm GPT-2 attention block with causal masking and padded keys:
 *   x + proj(merge(softmax(Q K^T / sqrt(D), causal, lengths) V)),  Q K V from LN(x). */
static kiln_tensor *build_attention_block(kiln_tensor **in, const void *param) {
    (void)param;
    kiln_tensor *x = in[0], *ln = in[1];
    int64_t c = x->shape[2], d = c / ATT_HEADS;
    kiln_tensor *ln_w = kiln_reshape(kiln_view_rows(ln, 0, 1), 1, &c);
    kiln_tensor *ln_b = kiln_reshape(kiln_view_rows(ln, 1, 1), 1, &c);
    kiln_tensor *qkv = linear_packed(kiln_layernorm(x, ln_w, ln_b, 1e-5f), in[2]);
    kiln_tensor *q = kiln_split_heads(kiln_slice(qkv, -1, 0, c), ATT_HEADS);
    kiln_tensor *k = kiln_split_heads(kiln_slice(qkv, -1, c, c), ATT_HEADS);
    kiln_tensor *v = kiln_split_heads(kiln_slice(qkv, -1, 2 * c, c), ATT_HEADS);
    kiln_softmax_opts o = {.scale = 1.0f / sqrtf((float)d), .causal = 1, .key_lengths = in[4]};
    kiln_tensor *p = kiln_softmax(kiln_matmul(q, k, NULL, 0, 1), &o);
    kiln_tensor *heads = kiln_merge_heads(kiln_matmul(p, v, NULL, 0, 0));
    return kiln_add(x, linear_packed(heads, in[3]));
}

static const kiln_verify_case cases[] = {
    {.name = "mlp_gelu_cross_entropy", .build = build_mlp, .n_in = 6,
     .in = {{.dtype = KILN_F32, .ndim = 2, .shape = {5, 7}, .grad = 1},
            {.dtype = KILN_F32, .ndim = 2, .shape = {7, 9}, .init = KILN_INIT_NORMAL, .hi = 0.5f, .grad = 1},
            {.dtype = KILN_F32, .ndim = 1, .shape = {9}, .init = KILN_INIT_NORMAL, .hi = 0.5f, .grad = 1},
            {.dtype = KILN_F32, .ndim = 2, .shape = {9, 6}, .init = KILN_INIT_NORMAL, .hi = 0.5f, .grad = 1},
            {.dtype = KILN_F32, .ndim = 1, .shape = {6}, .init = KILN_INIT_NORMAL, .hi = 0.5f, .grad = 1},
            {.dtype = KILN_I32, .ndim = 1, .shape = {5}, .init = KILN_INIT_INT, .lo = -1, .hi = 5}}},
    /* B = 2, T = 5, C = 8, 2 heads; key lengths in [2, 4] < T: both sequences padded */
    {.name = "attention_block_causal_padded", .quick = 1, .build = build_attention_block, .n_in = 5,
     .in = {{.dtype = KILN_F32, .ndim = 3, .shape = {2, 5, 8}, .grad = 1},
            {.dtype = KILN_F32, .ndim = 2, .shape = {2, 8}, .init = KILN_INIT_NORMAL, .lo = 0.5f, .hi = 0.5f, .grad = 1},
            {.dtype = KILN_F32, .ndim = 2, .shape = {9, 24}, .init = KILN_INIT_NORMAL, .hi = 0.4f, .grad = 1},
            {.dtype = KILN_F32, .ndim = 2, .shape = {9, 8}, .init = KILN_INIT_NORMAL, .hi = 0.4f, .grad = 1},
            {.dtype = KILN_I32, .ndim = 1, .shape = {2}, .init = KILN_INIT_INT, .lo = 2, .hi = 4}}},
};
const kiln_verify_group kiln_verify_group_autograd =
    {.name = "autograd", .cases = cases, .count = (int)(sizeof cases / sizeof cases[0])};
