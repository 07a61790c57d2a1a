/* Beam search's bookkeeping (seq2seq_beam.h). */
#include "model/seq2seq/seq2seq_beam.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

double seq2seq_length_penalty(float alpha, int len) { return pow((5.0 + len) / 6.0, (double)alpha); }

void seq2seq_beam_free(seq2seq_beam *b) {
    free(b->tokens);
    free(b->next_tokens);
    free(b->logp);
    free(b->best);
    free(b->finished_scores);
    free(b->cand_score);
    free(b->cand_hyp);
    free(b->cand_tok);
    memset(b, 0, sizeof *b);
}

int seq2seq_beam_init(seq2seq_beam *b, int beam, int V, int max_len, float alpha, int32_t eos) {
    *b = (seq2seq_beam){.beam = beam, .V = V, .max_len = max_len, .alpha = alpha, .eos = eos, .alive = 1,
                        .best_len = -1};
    size_t cells = (size_t)beam * (size_t)max_len;
    b->tokens = calloc(cells, sizeof *b->tokens);
    b->next_tokens = calloc(cells, sizeof *b->next_tokens);
    b->logp = calloc((size_t)beam, sizeof *b->logp);
    b->best = calloc((size_t)max_len, sizeof *b->best);
    b->finished_scores = calloc((size_t)beam, sizeof *b->finished_scores);
    b->cand_score = malloc((size_t)(2 * beam) * sizeof *b->cand_score);
    b->cand_hyp = malloc((size_t)(2 * beam) * sizeof *b->cand_hyp);
    b->cand_tok = malloc((size_t)(2 * beam) * sizeof *b->cand_tok);
    if (beam < 1 || beam > SEQ2SEQ_BEAM_MAX || !b->tokens || !b->next_tokens || !b->logp || !b->best ||
        !b->finished_scores || !b->cand_score || !b->cand_hyp || !b->cand_tok) {
        seq2seq_beam_free(b);
        return -1;
    }
    return 0;
}

/* Inserts (score, hyp, tok) into the sorted top list of `cap` (best first; ties keep the
 * earlier hypothesis and the lower token, so the search is deterministic). */
static void offer(seq2seq_beam *b, int *count, int cap, double score, int hyp, int tok) {
    if (*count == cap && score <= b->cand_score[cap - 1]) return;
    int i = *count < cap ? (*count)++ : cap - 1;
    while (i > 0 && b->cand_score[i - 1] < score) {
        b->cand_score[i] = b->cand_score[i - 1];
        b->cand_hyp[i] = b->cand_hyp[i - 1];
        b->cand_tok[i] = b->cand_tok[i - 1];
        i--;
    }
    b->cand_score[i] = score;
    b->cand_hyp[i] = hyp;
    b->cand_tok[i] = tok;
}

static void finish(seq2seq_beam *b, const int32_t *tokens, int len, double logp, int with_eos) {
    double score = logp / seq2seq_length_penalty(b->alpha, len + with_eos);
    /* keep the `beam` best scores, best first */
    int i;
    if (b->finished < b->beam)
        i = b->finished++;                     /* a free slot at the end */
    else if (score > b->finished_scores[b->beam - 1])
        i = b->beam - 1;                       /* replaces the worst */
    else
        i = -1;                                /* not among the best */
    for (; i > 0 && b->finished_scores[i - 1] < score; i--) b->finished_scores[i] = b->finished_scores[i - 1];
    if (i >= 0) b->finished_scores[i] = score;
    if (b->best_len >= 0 && score <= b->best_score) return;
    b->best_score = score;
    b->best_len = len;
    memcpy(b->best, tokens, (size_t)len * sizeof *tokens);
}

int seq2seq_beam_step(seq2seq_beam *b, const float *logprobs, int pos) {
    int L = b->max_len, count = 0, cap = 2 * b->beam;
    for (int h = 0; h < b->alive; h++)
        for (int v = 0; v < b->V; v++) offer(b, &count, cap, b->logp[h] + logprobs[(int64_t)h * b->V + v], h, v);
    int next = 0, identity = 1;
    double next_logp[SEQ2SEQ_BEAM_MAX];
    for (int i = 0; i < count && next < b->beam; i++) {
        int h = b->cand_hyp[i];
        if (b->cand_tok[i] == b->eos) {
            if (i < b->beam) finish(b, b->tokens + h * L, pos, b->cand_score[i], 1);
            continue;
        }
        memcpy(b->next_tokens + next * L, b->tokens + h * L, (size_t)pos * sizeof *b->tokens);
        b->next_tokens[next * L + pos] = b->cand_tok[i];
        next_logp[next] = b->cand_score[i];
        b->parent[next] = h;
        identity &= h == next;
        next++;
    }
    int32_t *t = b->tokens;
    b->tokens = b->next_tokens;
    b->next_tokens = t;
    memcpy(b->logp, next_logp, (size_t)next * sizeof *next_logp);
    b->alive = next;
    /* over when the best live hypothesis, however long it grows, cannot enter the finished best */
    if (b->finished == b->beam && next > 0) {
        double bound = b->logp[0] / seq2seq_length_penalty(b->alpha, L + 1);
        if (bound <= b->finished_scores[b->beam - 1]) b->alive = 0;
    }
    return identity;
}

void seq2seq_beam_end(seq2seq_beam *b) {
    for (int h = 0; h < b->alive; h++) finish(b, b->tokens + h * b->max_len, b->max_len, b->logp[h], 0);
    b->alive = 0;
}
