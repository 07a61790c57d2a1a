/* Beam search's bookkeeping, apart from the model: given every live hypothesis' next-token
 * log-probabilities as one [alive, V] matrix, it ranks the candidates, finishes hypotheses
 * on EOS, prunes to the beam and says when the search is over (seq2seq_search.c runs the
 * model and keeps the KV caches in step with `parent`). Host arithmetic only, so tests drive
 * it with hand-built log-probabilities, and one batched decoder call per step can feed it.
 *
 * The semantics are Hugging Face's and fairseq's: the step's 2 * beam best candidates by
 * log P; a hypothesis whose EOS ranks among the `beam` best is finished (an EOS ranked lower
 * is dropped: a barely possible EOS must not fill the finished list); the others fill the
 * next beam. Finished hypotheses rank by GNMT's length normalization
 * log P / ((5 + |Y|) / 6)^alpha, |Y| counting the EOS. The search is over when no live
 * hypothesis can beat the `beam` best finished ones any more (log P only falls as a
 * hypothesis grows, so log P / lp(max_len + 1) bounds what it can reach), or at max_len
 * (seq2seq_beam_end: live hypotheses then count as finished, without an EOS). With beam 1
 * and alpha 0 this is greedy decoding. */
#ifndef KILN_HOST_SEQ2SEQ_BEAM_H
#define KILN_HOST_SEQ2SEQ_BEAM_H

#include <stdint.h>

/* The widest beam (the per-step arrays are sized by it). */
#define SEQ2SEQ_BEAM_MAX 64
/* GNMT's length-penalty alpha, the default of decode's and eval's --length-penalty */
#define SEQ2SEQ_LENGTH_PENALTY 0.6f

typedef struct seq2seq_beam {
    int beam, V, max_len;
    float alpha;
    int32_t eos;
    int alive;                      /* live hypotheses (0: the search is over) */
    int32_t *tokens, *next_tokens;  /* [beam][max_len]: live hypotheses' tokens */
    double *logp;                   /* [beam]: their log P */
    int parent[SEQ2SEQ_BEAM_MAX];   /* after a step: the hypothesis each live one continues */
    /* the best finished hypothesis so far, and the `beam` best finished scores (best first) */
    int32_t *best;
    int best_len, finished;
    double best_score;
    double *finished_scores;
    double *cand_score;             /* a step's top candidates: 2 * beam */
    int *cand_hyp, *cand_tok;
} seq2seq_beam;

/* GNMT's length penalty ((5 + len) / 6)^alpha. */
double seq2seq_length_penalty(float alpha, int len);

/* One live, empty hypothesis. Returns 0, or -1 when out of host memory (b freed). */
int seq2seq_beam_init(seq2seq_beam *b, int beam, int V, int max_len, float alpha, int32_t eos);
void seq2seq_beam_free(seq2seq_beam *b);

/* The step at position pos (every live hypothesis holds pos tokens): logprobs[h * V + v] is
 * hypothesis h's log-probability of token v next. Afterwards b->alive hypotheses hold pos + 1
 * tokens, hypothesis j continuing b->parent[j]. Returns 1 when every one continues itself
 * (j == parent[j]: nothing to reorder), else 0. */
int seq2seq_beam_step(seq2seq_beam *b, const float *logprobs, int pos);

/* The length limit: the live hypotheses (max_len tokens) count as finished, without EOS. */
void seq2seq_beam_end(seq2seq_beam *b);

#endif
