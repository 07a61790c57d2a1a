/* The GPT config's Llama-family keys as checkpoint metadata (gpt.h), and Llama 3's rope
 * scaling as the frequency factors of rope.freqs. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "formats/text_number.h"
#include "model/gpt/gpt.h"

/* The integer keys: name, where the value goes, its largest value. */
typedef struct int_key {
    const char *key;
    size_t offset;
    int max;
} int_key;

#define PI 3.14159265358979323846

static const int_key int_keys[] = {
    {.key = "n_kv_head", .offset = offsetof(gpt_config, n_kv_head), .max = 1024},
    {.key = "head_dim", .offset = offsetof(gpt_config, head_dim), .max = 65536},
    {.key = "n_ffn", .offset = offsetof(gpt_config, n_ffn), .max = 1 << 20},
    {.key = "untied", .offset = offsetof(gpt_config, untied), .max = 1},
    {.key = "rope_freqs", .offset = offsetof(gpt_config, rope_freqs), .max = 1},
};
enum { N_INT_KEYS = sizeof int_keys / sizeof int_keys[0] };

static int *int_slot(gpt_config *cfg, const int_key *k) { return (int *)((char *)cfg + k->offset); }

void gpt_config_to_meta(const gpt_config *cfg, block_meta_put put, void *ctx) {
    gpt_config copy = *cfg;
    char value[32];
    for (int i = 0; i < N_INT_KEYS; i++) {
        int v = *int_slot(&copy, &int_keys[i]);
        if (!v) continue; /* GPT-2's */
        snprintf(value, sizeof value, "%d", v);
        put(ctx, int_keys[i].key, value);
    }
    if (cfg->position != GPT_POSITION_LEARNED) put(ctx, "position", gpt_position_names[cfg->position]);
}

int gpt_config_from_meta(gpt_config *cfg, block_meta_get get, void *ctx, char *err, size_t errlen) {
    for (int i = 0; i < N_INT_KEYS; i++) {
        const char *s = get(ctx, int_keys[i].key);
        int64_t v;
        if (!s) continue;
        if (text_to_int64(s, &v) || v < 0 || v > int_keys[i].max) {
            snprintf(err, errlen, "metadata %s = \"%s\" is not a whole number from 0 to %d", int_keys[i].key, s,
                     int_keys[i].max);
            return -1;
        }
        *int_slot(cfg, &int_keys[i]) = (int)v;
    }
    const char *p = get(ctx, "position");
    if (p) {
        int k = block_choice(gpt_position_names, GPT_POSITION_COUNT, p);
        if (k < 0) {
            snprintf(err, errlen, "metadata position = \"%s\" is not learned or rope", p);
            return -1;
        }
        cfg->position = (gpt_position)k;
    }
    return 0;
}

int gpt_rope_llama3_freqs(const gpt_rope_llama3 *s, int head_dim, double base, float *factors, char *err,
                          size_t errlen) {
    double factor = s->factor, low = s->low_freq_factor, high = s->high_freq_factor,
           old_len = s->original_max_position_embeddings;
    if (!(factor > 0) || !(low > 0) || !(high > low) || !(old_len > 0) || !isfinite(factor) || !isfinite(high) ||
        !isfinite(old_len) || !(base > 1) || head_dim < 2 || head_dim % 2) {
        snprintf(err, errlen, "rope scaling llama3 needs factor, low_freq_factor > 0, high_freq_factor above "
                 "low_freq_factor, original_max_position_embeddings > 0 and an even head width");
        return -1;
    }
    double low_wavelen = old_len / low, high_wavelen = old_len / high;
    for (int i = 0; i < head_dim / 2; i++) {
        double inv_freq = 1.0 / pow(base, (double)(2 * i) / head_dim), wavelen = 2.0 * PI / inv_freq;
        double f;
        if (wavelen < high_wavelen) {
            f = 1.0; /* high frequencies: kept */
        } else if (wavelen > low_wavelen) {
            f = factor; /* low frequencies: slowed by the factor */
        } else { /* between: HF's smoothed inverse frequency, as a factor */
            double smooth = (old_len / wavelen - low) / (high - low);
            f = 1.0 / ((1.0 - smooth) / factor + smooth);
        }
        factors[i] = (float)f;
    }
    return 0;
}
