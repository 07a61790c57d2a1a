/* The block options as checkpoint metadata ("kiln.norm" = "post", ...), so eval and decode
 * rebuild the model that was trained. A file without the keys (GPT-2 from Hugging Face, a
 * checkpoint from before the options) gets GPT-2's block. The Llama family's keys are
 * written only where a model departs from GPT-2's block: a GPT-2 checkpoint stays the file
 * it was before they existed. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "formats/text_number.h"
#include "model/block.h"

/* The choice-valued options: key, names, count, and where the value goes. */
typedef struct choice_key {
    const char *key;
    const char *const *names;
    int count;
    size_t offset; /* of the enum field in block_options */
    int sparse;    /* written only when not the first choice (GPT-2's) */
} choice_key;

static const choice_key choices[] = {
    {.key = "kiln.norm", .names = block_norm_names, .count = BLOCK_NORM_COUNT, .offset = offsetof(block_options, norm)},
    {.key = "kiln.residual", .names = block_residual_names, .count = BLOCK_RESIDUAL_COUNT,
     .offset = offsetof(block_options, residual)},
    {.key = "kiln.layer_type", .names = block_layer_names, .count = BLOCK_LAYER_COUNT,
     .offset = offsetof(block_options, layer)},
    {.key = "kiln.gau_attn", .names = block_gau_attn_names, .count = BLOCK_GAU_ATTN_COUNT,
     .offset = offsetof(block_options, gau_attn)},
    {.key = "kiln.norm_type", .names = block_norm_type_names, .count = BLOCK_NORM_TYPE_COUNT,
     .offset = offsetof(block_options, norm_type), .sparse = 1},
    {.key = "kiln.mlp", .names = block_mlp_names, .count = BLOCK_MLP_COUNT, .offset = offsetof(block_options, mlp),
     .sparse = 1},
    {.key = "kiln.bias", .names = block_bias_names, .count = BLOCK_BIAS_COUNT, .offset = offsetof(block_options, bias),
     .sparse = 1},
};
enum { N_CHOICES = sizeof choices / sizeof choices[0] };

/* The enums are ints in the struct: read and write them through their offset. */
static int *choice_slot(block_options *o, const choice_key *c) { return (int *)((char *)o + c->offset); }

void block_options_to_meta(const block_options *o, block_meta_put put, void *ctx) {
    block_options copy = *o;
    char value[32];
    for (int i = 0; i < N_CHOICES; i++) {
        int v = *choice_slot(&copy, &choices[i]);
        if (v || !choices[i].sparse) put(ctx, choices[i].key, choices[i].names[v]);
    }
    put(ctx, "kiln.sigma_reparam", o->sigma_reparam ? "1" : "0");
    put(ctx, "kiln.residual_attention", o->residual_attention ? "1" : "0");
    snprintf(value, sizeof value, "%.9g", (double)o->attn_temperature);
    put(ctx, "kiln.attn_temperature", value);
    snprintf(value, sizeof value, "%d", o->gau_s);
    put(ctx, "kiln.gau_s", value);
    if (o->qk_norm) put(ctx, "kiln.qk_norm", "1");
    if (!o->rope) return;
    put(ctx, "kiln.rope", "1");
    snprintf(value, sizeof value, "%.9g", (double)o->rope_base);
    put(ctx, "kiln.rope_base", value);
    put(ctx, "kiln.rope_layout", block_rope_layout_names[o->rope_layout == KILN_ROPE_HALF]);
}

/* A flag's metadata: absent (left as it is), "0" or "1". */
static int flag_from_meta(const char *key, int *slot, block_meta_get get, void *ctx, char *err, size_t errlen) {
    const char *v = get(ctx, key);
    if (!v) return 0;
    if (strcmp(v, "0") && strcmp(v, "1")) {
        snprintf(err, errlen, "metadata %s = \"%s\" must be 0 or 1", key, v);
        return -1;
    }
    *slot = v[0] == '1';
    return 0;
}

/* The rope's base and layout (the flags are read with the others). */
static int rope_from_meta(block_options *o, block_meta_get get, void *ctx, char *err, size_t errlen) {
    const char *base = get(ctx, "kiln.rope_base"), *layout = get(ctx, "kiln.rope_layout");
    double d;
    if (base) {
        if (text_to_double(base, &d) || !(d > 1) || !isfinite(d)) {
            snprintf(err, errlen, "metadata kiln.rope_base = \"%s\" is not a number above 1", base);
            return -1;
        }
        o->rope_base = (float)d;
    }
    if (o->rope && !layout) o->rope_layout = KILN_ROPE_HALF;
    if (layout) {
        int k = block_choice(block_rope_layout_names, 2, layout);
        if (k < 0) {
            snprintf(err, errlen, "metadata kiln.rope_layout = \"%s\" is not adjacent or half", layout);
            return -1;
        }
        o->rope_layout = (kiln_rope_layout)k;
    }
    return 0;
}

int block_options_from_meta(block_options *o, block_meta_get get, void *ctx, char *err, size_t errlen) {
    *o = block_options_default();
    for (int i = 0; i < N_CHOICES; i++) {
        const char *v = get(ctx, choices[i].key);
        if (!v) continue;
        int k = block_choice(choices[i].names, choices[i].count, v);
        if (k < 0) {
            snprintf(err, errlen, "metadata %s = \"%s\" is not one of kiln's choices", choices[i].key, v);
            return -1;
        }
        *choice_slot(o, &choices[i]) = k;
    }
    static const char *const flags[] = {"kiln.sigma_reparam", "kiln.residual_attention", "kiln.qk_norm", "kiln.rope"};
    int *flag_slots[] = {&o->sigma_reparam, &o->residual_attention, &o->qk_norm, &o->rope};
    for (int i = 0; i < 4; i++)
        if (flag_from_meta(flags[i], flag_slots[i], get, ctx, err, errlen)) return -1;
    if (rope_from_meta(o, get, ctx, err, errlen)) return -1;
    const char *t = get(ctx, "kiln.attn_temperature");
    double d;
    if (t) {
        if (text_to_double(t, &d) || !(d > 0) || !isfinite(d)) {
            snprintf(err, errlen, "metadata kiln.attn_temperature = \"%s\" is not a positive number", t);
            return -1;
        }
        o->attn_temperature = (float)d;
    }
    const char *s = get(ctx, "kiln.gau_s");
    int64_t n;
    if (s) {
        if (text_to_int64(s, &n) || n < 1 || n > 65536) {
            snprintf(err, errlen, "metadata kiln.gau_s = \"%s\" is not a width from 1 to 65536", s);
            return -1;
        }
        o->gau_s = (int)n;
    }
    return block_options_check(o, err, errlen);
}
