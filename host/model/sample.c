/* Token sampling (see sample.h). */
#include "model/sample.h"

#include <math.h>
#include <stdlib.h>

#include "kiln/rng.h"

typedef struct ranked {
    float logit;
    int token;
} ranked;

struct sampler {
    sample_opts opts;
    int vocab;
    ranked *order; /* tokens, most likely first */
    float *prob;   /* their probabilities in that order */
};

sampler *sampler_new(int vocab, const sample_opts *opts) {
    sampler *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->opts = *opts;
    s->vocab = vocab;
    s->order = malloc((size_t)vocab * sizeof *s->order);
    s->prob = malloc((size_t)vocab * sizeof *s->prob);
    if (!s->order || !s->prob) {
        sampler_free(s);
        return NULL;
    }
    return s;
}

void sampler_free(sampler *s) {
    if (!s) return;
    free(s->order);
    free(s->prob);
    free(s);
}

static int argmax(const float *x, int n) {
    int best = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return best;
}

/* Descending by logit; equal logits by ascending token, so the order is deterministic. */
static int by_logit_desc(const void *a, const void *b) {
    const ranked *x = a, *y = b;
    if (x->logit != y->logit) return x->logit > y->logit ? -1 : 1;
    return (x->token > y->token) - (x->token < y->token);
}

int sampler_next(sampler *s, const float *logits, uint64_t draw) {
    const sample_opts *o = &s->opts;
    int n = s->vocab;
    if (o->greedy || !(o->temperature > 0.0f)) return argmax(logits, n);
    for (int i = 0; i < n; i++) s->order[i] = (ranked){.logit = logits[i], .token = i};
    qsort(s->order, (size_t)n, sizeof *s->order, by_logit_desc);
    int keep = o->top_k > 0 && o->top_k < n ? o->top_k : n;
    /* softmax(logits / T) over the kept tokens, in double for a stable cumulative sum */
    double top = s->order[0].logit, total = 0.0;
    for (int r = 0; r < keep; r++) {
        double p = exp(((double)s->order[r].logit - top) / o->temperature);
        s->prob[r] = (float)p;
        total += p;
    }
    if (o->top_p > 0.0f && o->top_p < 1.0f) {
        double cum = 0.0;
        int r = 0;
        while (r < keep) {
            cum += s->prob[r] / total;
            r++;
            if (cum >= o->top_p) break;
        }
        keep = r;
        total = 0.0;
        for (r = 0; r < keep; r++) total += s->prob[r];
    }
    double u = (double)kiln_rng_uniform(o->seed, SAMPLE_STREAM, draw) * total, cum = 0.0;
    for (int r = 0; r < keep; r++) {
        cum += s->prob[r];
        if (u < cum) return s->order[r].token;
    }
    return s->order[keep - 1].token; /* u rounded up to the total */
}
