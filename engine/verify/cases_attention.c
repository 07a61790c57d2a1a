/* The verification cases of fused attention (kiln/verify.h): run by `kiln verify` and by
 * tests/test_op_attention.c. Every case is checked against finite differences on the CPU
 * and against the CPU on a device. */
#include "kiln/kiln.h"
#include "verify/cases.h"

/* The case inputs: 0 q [B, Tq, H hd], 1 k and 2 v [B, Tk, KVH hd], then the key lengths
 * when lengths_in is set (input 3). */
typedef struct attn_param {
    int heads, kv_heads, causal, lengths_in;
    float scale, temperature, dropout;
} attn_param;

static kiln_attention_opts attn_opts(kiln_tensor **in, const attn_param *p) {
    kiln_attention_opts o = {.n_head = p->heads, .n_kv_head = p->kv_heads, .scale = p->scale,
                             .temperature = p->temperature, .causal = p->causal,
                             .key_lengths = p->lengths_in ? in[p->lengths_in] : NULL, .dropout = p->dropout};
    return o;
}

/* The stream is pinned so that every forward of the finite-difference check draws one
 * dropout mask. */
static kiln_tensor *build_fused(kiln_tensor **in, const void *param) {
    kiln_attention_opts o = attn_opts(in, param);
    kiln_set_rng_stream(in[0]->ctx, 0);
    return kiln_attention(in[0], in[1], in[2], &o);
}

static const attn_param CAUSAL4 = {.heads = 4, .causal = 1};

static const kiln_verify_case cases[] = {
    {.name = "attention_causal", .quick = 1, .build = build_fused, .param = &CAUSAL4, .n_in = 3,
     .in = {{.dtype = KILN_F32, .ndim = 3, .shape = {2, 7, 32}, .grad = 1},
            {.dtype = KILN_F32, .ndim = 3, .shape = {2, 7, 32}, .grad = 1},
            {.dtype = KILN_F32, .ndim = 3, .shape = {2, 7, 32}, .grad = 1}}},
};
const kiln_verify_group kiln_verify_group_attention =
    {.name = "attention", .cases = cases, .count = (int)(sizeof cases / sizeof cases[0])};
