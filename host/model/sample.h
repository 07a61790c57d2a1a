/* Choosing the next token from logits: greedy, or sampling with temperature, top-k and
 * top-p (nucleus), drawing from the counter RNG so a seed reproduces a sample exactly. */
#ifndef KILN_HOST_MODEL_SAMPLE_H
#define KILN_HOST_MODEL_SAMPLE_H

#include <stdint.h>

typedef struct sample_opts {
    int greedy;        /* 1: argmax (the lowest index among equal maxima) */
    float temperature; /* > 0; logits are divided by it */
    int top_k;         /* 0: off; else keep the k most likely tokens */
    float top_p;       /* 1: off; else keep the smallest set of most likely tokens whose
                          probability reaches top_p */
    uint64_t seed;
} sample_opts;

typedef struct sampler sampler;

/* A sampler for vocabularies of up to `vocab` tokens. NULL when out of memory. */
sampler *sampler_new(int vocab, const sample_opts *opts);
void sampler_free(sampler *s);

/* The next token for logits[vocab]. `draw` numbers the draw (the position being
 * generated): the uniform number it uses is kiln_rng_uniform(seed, SAMPLE_STREAM, draw). */
int sampler_next(sampler *s, const float *logits, uint64_t draw);

/* The RNG stream decoding draws from (apart from dropout's and init's). */
#define SAMPLE_STREAM ((uint64_t)3 << 40)

#endif
