/* The block options as checkpoint metadata ("kiln.norm" = "post", ...), so eval and decode
 * rebuild the model that was trained. A file without the keys (GPT-2 from Hugging Face, a
 * checkpoint from before the options) gets GPT-2's block. */
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
} choice_key;

static const choice_key choices[] = {
    {.key = "kiln.norm", .names = block_norm_names, .count = BLOCK_NORM_COUNT, .offset = offsetof(block_options, norm)},
    {.key = "kiln.residual", .names = block_residual_names, .count = BLOCK_RESIDUAL_COUNT,
     .offset = offsetof(block_options, residual)},
    {.key = "kiln.layer_type", .names = block_layer_names, .count = BLOCK_LAYER_COUNT,
     .offset = offsetof(block_options, layer)},
    {.key = "kiln.gau_attn", .names = block_gau_attn_names, .count = BLOCK_GAU_ATTN_COUNT,
     .offset = offsetof(block_options, gau_attn)},
};
enum { N_CHOICES = sizeof choices / sizeof choices[0] };

/* The enums are ints in the struct: read and write them through their offset. */
static int *choice_slot(block_options *o, const choice_key *c) { return (int *)((char *)o + c->offset); }

void block_options_to_meta(const block_options *o, block_meta_put put, void *ctx) {
    block_options copy = *o;
    char value[32];
    for (int i = 0; i < N_CHOICES; i++) put(ctx, choices[i].key, choices[i].names[*choice_slot(&copy, &choices[i])]);
    put(ctx, "kiln.sigma_reparam", o->sigma_reparam ? "1" : "0");
    put(ctx, "kiln.residual_attention", o->residual_attention ? "1" : "0");
    snprintf(value, sizeof value, "%.9g", (double)o->attn_temperature);
    put(ctx, "kiln.attn_temperature", value);
    snprintf(value, sizeof value, "%d", o->gau_s);
    put(ctx, "kiln.gau_s", value);
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
    static const char *const flags[] = {"kiln.sigma_reparam", "kiln.residual_attention"};
    int *flag_slots[] = {&o->sigma_reparam, &o->residual_attention};
    for (int i = 0; i < 2; i++) {
        const char *v = get(ctx, flags[i]);
        if (!v) continue;
        if (strcmp(v, "0") && strcmp(v, "1")) {
            snprintf(err, errlen, "metadata %s = \"%s\" must be 0 or 1", flags[i], v);
            return -1;
        }
        *flag_slots[i] = v[0] == '1';
    }
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
