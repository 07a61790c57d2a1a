/* The verification cases of fused attention (kiln/verify.h): run by `kiln verify` and by
 * tests/test_op_attention.c. Each case's reference is the unfused composition the model
 * used before the fused op (split heads, q k^T, kiln_softmax, kiln_dropout, probs @ v,
 * merge heads): a device's fused op and the CPU's are compared with it (the CPU's
 * gradients meet finite differences too). The cases cover ragged lengths across the
 * kernels' tiles, head counts and widths up to 256, grouped-query attention, causal and
 * key-length masks (fully masked rows included), cross-attention (Tq != Tk), the decode
 * step (one query at the end of the keys), scale and temperature, and dropout. */
#include <math.h>

#include "kiln/kiln.h"
#include "verify/cases.h"

/* The case inputs: 0 q [B, Tq, H hd], 1 k and 2 v [B, Tk, KVH hd], then the key lengths
 * when lengths_in is set (input 3). */
typedef struct attn_param {
    int heads, kv_heads, causal, lengths_in;
    float scale, temperature, dropout;
} attn_param;

/* The dropout stream is pinned in both builds, so that the fused and the unfused path,
 * and every forward of the finite-difference check, draw one mask. */
static kiln_tensor *build_fused(kiln_tensor **in, const void *param) {
    const attn_param *p = param;
    kiln_attention_opts o = {.n_head = p->heads, .n_kv_head = p->kv_heads, .scale = p->scale,
                             .temperature = p->temperature, .causal = p->causal,
                             .key_lengths = p->lengths_in ? in[p->lengths_in] : NULL, .dropout = p->dropout};
    kiln_set_rng_stream(in[0]->ctx, 0);
    return kiln_attention(in[0], in[1], in[2], &o);
}

/* The unfused composition. Query head h = kv G + g is row block g of [B, KVH, G Tq, hd]
 * (the same memory as [B, H, Tq, hd]), so one batched product gives every group's scores. */
static kiln_tensor *build_unfused(kiln_tensor **in, const void *param) {
    const attn_param *p = param;
    kiln_tensor *q = in[0], *k = in[1], *v = in[2];
    int64_t H = p->heads, KVH = p->kv_heads ? p->kv_heads : H, G = H / KVH;
    int64_t B = q->shape[0], Tq = q->shape[1], Tk = k->shape[1], hd = q->shape[2] / H;
    int64_t grouped_q[4] = {B, KVH, G * Tq, hd}, scores_shape[4] = {B, H, Tq, Tk};
    int64_t grouped_p[4] = {B, KVH, G * Tq, Tk}, heads[4] = {B, H, Tq, hd};
    kiln_set_rng_stream(q->ctx, 0);
    kiln_tensor *qh = kiln_reshape(kiln_split_heads(q, (int)H), 4, grouped_q);
    kiln_tensor *scores = kiln_reshape(kiln_matmul(qh, kiln_split_heads(k, (int)KVH), NULL, 0, 1), 4, scores_shape);
    kiln_softmax_opts so = {.scale = p->scale != 0 ? p->scale : 1.0f / sqrtf((float)hd),
                            .temperature = p->temperature, .causal = p->causal,
                            .key_lengths = p->lengths_in ? in[p->lengths_in] : NULL};
    kiln_tensor *probs = kiln_softmax(scores, &so);
    if (p->dropout > 0) probs = kiln_dropout(probs, p->dropout);
    kiln_tensor *y = kiln_matmul(kiln_reshape(probs, 4, grouped_p), kiln_split_heads(v, (int)KVH), NULL, 0, 0);
    return kiln_merge_heads(kiln_reshape(y, 4, heads));
}

static const attn_param CAUSAL4 = {.heads = 4, .causal = 1}, PADDED3 = {.heads = 3, .lengths_in = 3},
                        GQA6_2 = {.heads = 6, .kv_heads = 2, .causal = 1},
                        MQA4 = {.heads = 4, .kv_heads = 1, .causal = 1, .lengths_in = 3},
                        CROSS2 = {.heads = 2, .lengths_in = 3}, DECODE = {.heads = 4, .kv_heads = 2, .causal = 1},
                        TEMPERED = {.heads = 2, .causal = 1, .scale = 0.3f, .temperature = 0.7f},
                        DROPOUT = {.heads = 2, .kv_heads = 1, .causal = 1, .lengths_in = 3, .dropout = 0.2f},
                        CAUSAL2 = {.heads = 2, .causal = 1}, WIDE = {.heads = 2, .kv_heads = 1, .causal = 1, .lengths_in = 3},
                        ONE_HEAD = {.heads = 1, .lengths_in = 3};

/* q, k, v and the lengths of a case: B batches, Tq queries, Tk keys, H and KVH heads of hd. */
#define ATTN_QKV(B, Tq, Tk, H, KVH, hd)                                              \
    {.dtype = KILN_F32, .ndim = 3, .shape = {B, Tq, (H) * (hd)}, .grad = 1},         \
        {.dtype = KILN_F32, .ndim = 3, .shape = {B, Tk, (KVH) * (hd)}, .grad = 1},   \
        {.dtype = KILN_F32, .ndim = 3, .shape = {B, Tk, (KVH) * (hd)}, .grad = 1}
#define ATTN_LENGTHS(B, least, most) {.dtype = KILN_I32, .ndim = 1, .shape = {B}, .init = KILN_INIT_INT, .lo = least, .hi = most}

static const kiln_verify_case cases[] = {
    {.name = "attention_causal", .quick = 1, .build = build_fused, .reference = build_unfused, .param = &CAUSAL4,
     .n_in = 3, .in = {ATTN_QKV(2, 7, 7, 4, 4, 8)}},
    /* a bidirectional encoder's padding: lengths from 0 (a fully masked sequence) to Tk */
    {.name = "attention_padded", .build = build_fused, .reference = build_unfused, .param = &PADDED3, .n_in = 4,
     .in = {ATTN_QKV(3, 13, 13, 3, 3, 16), ATTN_LENGTHS(3, 0, 13)}},
    {.name = "attention_gqa", .quick = 1, .build = build_fused, .reference = build_unfused, .param = &GQA6_2,
     .n_in = 3, .in = {ATTN_QKV(2, 9, 9, 6, 2, 8)}},
    {.name = "attention_mqa_padded", .build = build_fused, .reference = build_unfused, .param = &MQA4, .n_in = 4,
     .in = {ATTN_QKV(2, 11, 11, 4, 1, 8), ATTN_LENGTHS(2, 1, 11)}},
    /* cross-attention: queries of the target over the source's padded keys */
    {.name = "attention_cross", .build = build_fused, .reference = build_unfused, .param = &CROSS2, .n_in = 4,
     .in = {ATTN_QKV(2, 5, 11, 2, 2, 16), ATTN_LENGTHS(2, 1, 11)}},
    /* a KV-cache step: one query at position Tk - 1 sees every key */
    {.name = "attention_decode", .quick = 1, .build = build_fused, .reference = build_unfused, .param = &DECODE,
     .n_in = 3, .in = {ATTN_QKV(2, 1, 17, 4, 2, 16)}},
    /* Tq > Tk under the causal offset: the first two queries see no key (y = 0, no gradient) */
    {.name = "attention_causal_tq_gt_tk", .build = build_fused, .reference = build_unfused, .param = &CAUSAL2,
     .n_in = 3, .in = {ATTN_QKV(1, 6, 4, 2, 2, 8)}},
    {.name = "attention_temperature", .build = build_fused, .reference = build_unfused, .param = &TEMPERED,
     .n_in = 3, .in = {ATTN_QKV(2, 10, 10, 2, 2, 8)}},
    {.name = "attention_dropout", .build = build_fused, .reference = build_unfused, .param = &DROPOUT, .n_in = 4,
     .in = {ATTN_QKV(2, 12, 12, 2, 1, 8), ATTN_LENGTHS(2, 3, 12)}},
    /* across the CPU's 64-row tiles, with the masks cutting tiles in the middle */
    {.name = "attention_tiles_hd64", .build = build_fused, .reference = build_unfused, .param = &CAUSAL2,
     .n_in = 3, .in = {ATTN_QKV(1, 150, 150, 2, 2, 64)}},
    {.name = "attention_tiles_hd128", .quick = 1, .build = build_fused, .reference = build_unfused, .param = &WIDE,
     .n_in = 4, .in = {ATTN_QKV(2, 70, 70, 2, 1, 128), ATTN_LENGTHS(2, 33, 70)}},
    {.name = "attention_hd256", .build = build_fused, .reference = build_unfused, .param = &ONE_HEAD, .n_in = 4,
     .in = {ATTN_QKV(2, 67, 131, 1, 1, 256), ATTN_LENGTHS(2, 60, 131)}},
};
const kiln_verify_group kiln_verify_group_attention =
    {.name = "attention", .cases = cases, .count = (int)(sizeof cases / sizeof cases[0])};
