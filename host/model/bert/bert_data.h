/* Text as BERT trains on it: tokens framed [CLS] ... [SEP] and BERT's masking.
 *
 * Training sequences are T - 2 consecutive tokens of the training split drawn for (seed,
 * draw) as data_sample_batch draws GPT windows, framed [CLS] tokens [SEP]. Evaluation walks
 * a token range in consecutive windows of T - 2 tokens (the last one may be shorter: it is
 * padded). Masking, per sequence of n maskable positions (the tokens, not [CLS], [SEP] or
 * padding), from the counter RNG keyed by (seed ^ BERT_MASK_SALT, stream):
 *   k = max(1, round(0.15 n)) positions are chosen, uniformly without replacement;
 *   each chosen one becomes [MASK] with probability 0.8, a uniformly drawn non-special
 *   token with probability 0.1, and stays with probability 0.1;
 *   its target is the original token; every other position's is -1. */
#ifndef KILN_HOST_MODEL_BERT_DATA_H
#define KILN_HOST_MODEL_BERT_DATA_H

#include <stddef.h>
#include <stdint.h>

#include "formats/data.h"
#include "model/bert/bert.h"
#include "model/eval_watch.h"
#include "text/tokenizer.h"

#define BERT_MASK_SALT UINT64_C(0x6b696c6e6d61736b) /* "kilnmask" */
/* The seed of evaluation's masking: the same positions in every evaluation. */
#define BERT_EVAL_SEED UINT64_C(20190524)

/* The special ids masking needs and the tokens a random replacement draws from. */
typedef struct bert_vocab {
    int32_t cls, sep, mask, pad; /* pad: [PAD], or [SEP] when the tokenizer has none */
    int32_t vocab_size;
    int32_t *normal;  /* the non-special ids */
    int32_t n_normal;
} bert_vocab;

/* From a tokenizer that has [CLS], [SEP] and [MASK] (else -1 and one line in err). */
int bert_vocab_init(bert_vocab *v, const tokenizer *t, char *err, size_t errlen);
void bert_vocab_free(bert_vocab *v);

/* What masking decided, for the statistics. */
typedef struct bert_mask_counts {
    int64_t maskable, chosen, masked, random, kept;
} bert_mask_counts;

/* The number of positions chosen among n maskable ones: max(1, round(0.15 n)) (halves
 * rounded up), 0 for n = 0. */
int bert_mask_count(int n);

/* Frames tokens[0..n) as row = [CLS] tokens [SEP] [PAD]... of `width` (n + 2 <= width),
 * masks it for (seed, stream) and writes the targets (-1 where nothing is predicted).
 * counts (may be NULL) is added to. */
void bert_mask_row(const bert_vocab *v, const int32_t *tokens, int n, int width, uint64_t seed, uint64_t stream,
                   int32_t *row, int32_t *targets, bert_mask_counts *counts);

/* Allocates a batch of rows x width (bert_batch_free). Returns 0 or -1 (out of memory). */
int bert_batch_alloc(bert_batch *b, int rows, int width);

/* Training batch `draw`: `rows` sequences of width T drawn from ds's training split with
 * data_sample_batch(seed, draw), sequence r masked with stream draw * rows + r. Returns 0,
 * or -1 with a message. */
int bert_train_batch(const bert_vocab *v, const data_set *ds, uint64_t seed, uint64_t draw, int rows, int T,
                     bert_batch *b, char *err, size_t errlen);

/* Evaluation windows of tokens[0..n) for sequences of width T: ceil(n / (T - 2)). */
int64_t bert_eval_windows(int64_t n, int T);

/* Evaluation windows [first, first + rows) of tokens[0..n) as a batch of sequences of
 * width T (narrower when it is the last window alone and short), window i masked with
 * (BERT_EVAL_SEED, i). Returns 0 or -1 (out of memory). */
int bert_eval_batch(const bert_vocab *v, const int32_t *tokens, int64_t n, int T, int64_t first, int rows,
                    bert_batch *b);

/* The MLM loss (mean cross-entropy per predicted position) and accuracy (the fraction of
 * predicted positions whose arg-max logit is the original token) over every evaluation
 * window of tokens[0..n), window i masked with (BERT_EVAL_SEED, i), `rows` windows per
 * forward pass, in evaluation mode. max_windows > 0 evaluates the first ones only. Returns
 * 0, or -1 with a message. */
int bert_eval(bert_model *m, const bert_vocab *v, const int32_t *tokens, int64_t n, int rows, int64_t max_windows,
              double *loss, double *accuracy, char *err, size_t errlen);
/* bert_eval telling `watch` after each forward pass (the windows done; kiln eval's progress). */
int bert_eval_watched(bert_model *m, const bert_vocab *v, const int32_t *tokens, int64_t n, int rows,
                      int64_t max_windows, const eval_watch *watch, double *loss, double *accuracy, char *err,
                      size_t errlen);

#endif
