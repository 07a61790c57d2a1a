/* Parallel text as the encoder-decoder trains on it: pairs tokenized (the source's tokens
 * then EOS; the decoder reads BOS then the target's tokens and predicts them then EOS),
 * pairs longer than the model's positions left out, length-bucketed batches by token count
 * (formats/pairs.h) and the order training draws them in. */
#ifndef KILN_HOST_MODEL_SEQ2SEQ_DATA_H
#define KILN_HOST_MODEL_SEQ2SEQ_DATA_H

#include <stddef.h>
#include <stdint.h>

#include "formats/pairs.h"
#include "model/eval_watch.h"
#include "model/seq2seq/seq2seq.h"
#include "text/tokenizer.h"

/* The batch RNG key is seed ^ this, apart from init and dropout draws. */
#define SEQ2SEQ_DATA_RNG_SALT UINT64_C(0x6b696c6e70616972) /* "kilnpair" */

typedef struct seq2seq_data {
    int64_t count;            /* pairs kept */
    int32_t *ids;             /* every pair's source then target ids */
    int64_t *src_at, *tgt_at; /* where pair i's start in ids */
    int32_t *src_len;         /* source tokens + EOS */
    int32_t *tgt_len;         /* target tokens + 1: the decoder's steps */
    int64_t n_batches, *starts, *order; /* pairs_make_batches */
    int64_t dropped;          /* pairs longer than the model's positions */
    int64_t oversized;        /* batches of one pair above the token budget */
    int64_t target_tokens;    /* sum of tgt_len: the predictions an epoch makes */
    int32_t bos, eos;
} seq2seq_data;

/* Tokenizes pairs [first, first + count) of p, source with src_tok and target with tgt_tok
 * (which must have BOS and EOS), keeps those whose source + EOS and BOS + target fit in
 * max_len positions, and cuts batches of at most batch_tokens padded tokens. Returns 0,
 * SEQ2SEQ_DATA_TOO_LONG when every pair is too long (an empty result; the command says
 * which option sets the positions), or -1, each error with one line in err. */
enum { SEQ2SEQ_DATA_TOO_LONG = -2 };
int seq2seq_data_build(const text_pairs *p, int64_t first, int64_t count, const tokenizer *src_tok,
                       const tokenizer *tgt_tok, int max_len, int64_t batch_tokens, seq2seq_data **out, char *err,
                       size_t errlen);
void seq2seq_data_free(seq2seq_data *d);

/* Batch b as a padded host batch; out's arrays are (re)allocated (seq2seq_batch_free). */
int seq2seq_data_batch(const seq2seq_data *d, int64_t b, seq2seq_batch *out);
void seq2seq_batch_free(seq2seq_batch *b);

/* The batch training draw `draw` trains on: epoch draw / n_batches visits every batch once,
 * in an order shuffled from (seed, epoch), so a resumed run draws what it would have. */
int64_t seq2seq_data_draw(const seq2seq_data *d, uint64_t seed, uint64_t draw);

/* The mean cross-entropy per target token over every batch (evaluation mode, no label
 * smoothing). Returns 0, or -1 with the engine's message in err. */
int seq2seq_data_loss(seq2seq_model *m, const seq2seq_data *d, double *loss, char *err, size_t errlen);
/* seq2seq_data_loss telling `watch` after each batch (the batches done; kiln eval's progress). */
int seq2seq_data_loss_watched(seq2seq_model *m, const seq2seq_data *d, const eval_watch *watch, double *loss, char *err,
                              size_t errlen);

#endif
