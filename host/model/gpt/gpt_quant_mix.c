/* Which ggml type each tensor gets (gpt_quant_mix.h): llama.cpp 80fb11a's src/llama-quant.cpp,
 * for the types kiln writes and the tensors its GPTs have (no experts, no 70B rule, no
 * importance matrix, no user overrides). */
#include "model/gpt/gpt_quant_mix.h"

#include <stdio.h>
#include <string.h>

#include "formats/gguf.h"

/* llama_ftype (llama.h) of each type; the pure K types have none of their own: they take the
 * smaller mix of their base type, as `llama-quantize --pure Q4_K_S` writes. */
static const gpt_quant_type types[] = {
    {"f32", GGML_TYPE_F32, 0, GPT_MIX_NONE},        {"f16", GGML_TYPE_F16, 1, GPT_MIX_NONE},
    {"q8_0", GGML_TYPE_Q8_0, 7, GPT_MIX_NONE},      {"q4_0", GGML_TYPE_Q4_0, 2, GPT_MIX_NONE},
    {"q4_1", GGML_TYPE_Q4_1, 3, GPT_MIX_NONE},      {"q5_0", GGML_TYPE_Q5_0, 8, GPT_MIX_NONE},
    {"q5_1", GGML_TYPE_Q5_1, 9, GPT_MIX_NONE},      {"q4_k", GGML_TYPE_Q4_K, 14, GPT_MIX_NONE},
    {"q5_k", GGML_TYPE_Q5_K, 16, GPT_MIX_NONE},     {"q6_k", GGML_TYPE_Q6_K, 18, GPT_MIX_NONE},
    {"q4_k_m", GGML_TYPE_Q4_K, 15, GPT_MIX_Q4_K_M}, {"q4_k_s", GGML_TYPE_Q4_K, 14, GPT_MIX_Q4_K_S},
    {"q5_k_m", GGML_TYPE_Q5_K, 17, GPT_MIX_Q5_K_M}, {"q5_k_s", GGML_TYPE_Q5_K, 16, GPT_MIX_Q5_K_S},
};
#define N_TYPES (sizeof types / sizeof types[0])
_Static_assert(N_TYPES == GPT_QUANT_TYPE_COUNT, "gpt_quant_mix.h counts the types");

const gpt_quant_type *gpt_quant_type_at(int i) { return i >= 0 && i < (int)N_TYPES ? &types[i] : NULL; }

/* The layer rules of llama_tensor_get_type_impl for attn_v (and attn_qkv, attn_kv_b:
 * category_is_attn_v) and ffn_down. llama.cpp counts those tensors in its sorted order
 * (weight_name_comparer: by block, then name), one per block in a GPT, so its counters
 * i_attention_wv and i_ffn_down are the block's index and n_attention_wv, n_ffn_down the
 * number of blocks. */
typedef enum layer_rule {
    LAYERS_NONE,
    LAYERS_MORE_BITS, /* use_more_bits: the first and last eighth, and every third between */
    LAYERS_FIRST_4,   /* i_attention_wv < 4 */
    LAYERS_FIRST_8TH  /* i_layer < n_layer / 8 */
} layer_rule;

static const struct {
    gpt_mix_rules rules;
    layer_rule attn_v;
    int attn_v_type;
    layer_rule ffn_down;
    int ffn_down_type;
} mix_rules[] = {
    {GPT_MIX_Q4_K_M, LAYERS_MORE_BITS, GGML_TYPE_Q6_K, LAYERS_MORE_BITS, GGML_TYPE_Q6_K},
    {GPT_MIX_Q5_K_M, LAYERS_MORE_BITS, GGML_TYPE_Q6_K, LAYERS_MORE_BITS, GGML_TYPE_Q6_K},
    {GPT_MIX_Q4_K_S, LAYERS_FIRST_4, GGML_TYPE_Q5_K, LAYERS_FIRST_8TH, GGML_TYPE_Q5_K},
    {GPT_MIX_Q5_K_S, LAYERS_NONE, 0, LAYERS_NONE, 0},
};

const gpt_quant_type *gpt_quant_type_find(const char *name) {
    for (size_t i = 0; name && i < N_TYPES; i++)
        if (!strcmp(name, types[i].name)) return &types[i];
    return NULL;
}

const char *gpt_quant_type_names(int from) {
    static char all[2][192];
    char *out = all[from > 0];
    if (!out[0])
        for (size_t i = from > 0 ? 2 : 0, at = 0; i < N_TYPES; i++)
            at += (size_t)snprintf(out + at, sizeof all[0] - at, "%s%s", at ? ", " : "", types[i].name);
    return out;
}

int gpt_quant_type_quantized(const gpt_quant_type *t) {
    return t->ggml_type != GGML_TYPE_F32 && t->ggml_type != GGML_TYPE_F16;
}

int gpt_quant_table_type(const gpt_quant_type *t) {
    if (!gpt_quant_type_quantized(t)) return t->ggml_type;
    return t->rules == GPT_MIX_NONE ? GGML_TYPE_F16 : GGML_TYPE_F32;
}

static int fits(int type, int64_t cols) { return gguf_row_bytes(type, cols) != 0; }

static int layer_applies(layer_rule rule, int layer, int n_layer) {
    switch (rule) {
    case LAYERS_MORE_BITS: /* llama_tensor_get_type_impl's use_more_bits lambda */
        return layer < n_layer / 8 || layer >= 7 * n_layer / 8 || (layer - n_layer / 8) % 3 == 2;
    case LAYERS_FIRST_4: return layer < 4;
    case LAYERS_FIRST_8TH: return layer < n_layer / 8;
    default: return 0;
    }
}

/* llama_tensor_get_type_impl for the mixes: the output head (and a tied token_embd) to Q6_K,
 * or Q8_0 when its rows are not whole blocks of the mix's type; attn_v and ffn_down by their
 * layer rule; everything else the mix's type. */
static int mix_type(const gpt_quant_type *t, const char *name, int64_t cols, int n_layer, int tied) {
    int output = !strcmp(name, "output.weight"), embd = !strcmp(name, "token_embd.weight");
    if (output || (tied && embd)) return !fits(t->ggml_type, cols) ? GGML_TYPE_Q8_0 : GGML_TYPE_Q6_K;
    size_t r = 0;
    while (mix_rules[r].rules != t->rules) r++;
    int layer = -1;
    if (sscanf(name, "blk.%d.", &layer) != 1) return t->ggml_type;
    int attn_v = strstr(name, "attn_v.weight") || strstr(name, "attn_qkv.weight") || strstr(name, "attn_kv_b.weight");
    if (attn_v && layer_applies(mix_rules[r].attn_v, layer, n_layer)) return mix_rules[r].attn_v_type;
    if (!attn_v && strstr(name, "ffn_down") && layer_applies(mix_rules[r].ffn_down, layer, n_layer))
        return mix_rules[r].ffn_down_type;
    return t->ggml_type;
}

/* tensor_type_fallback: a 256-value type on rows it does not divide goes to the 32-value type
 * of about its bits; a 32-value type stays; what still does not divide the rows is f16. */
static int fallback(int type, int64_t cols) {
    if (fits(type, cols)) return type;
    int to = type == GGML_TYPE_Q4_K ? GGML_TYPE_Q5_0
           : type == GGML_TYPE_Q5_K ? GGML_TYPE_Q5_1
           : type == GGML_TYPE_Q6_K ? GGML_TYPE_Q8_0
                                    : type;
    return fits(to, cols) ? to : GGML_TYPE_F16;
}

int gpt_quant_tensor_type(const gpt_quant_type *t, const char *name, int64_t cols, int n_layer, int tied) {
    if (!gpt_quant_type_quantized(t)) return t->ggml_type; /* llama_tensor_get_type: only quantized types change */
    int type = t->rules == GPT_MIX_NONE ? t->ggml_type : mix_type(t, name, cols, n_layer, tied);
    return fallback(type, cols);
}
