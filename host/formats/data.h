/* Training data: a token sequence split into a training part and a held-out validation
 * part, random training batches that depend only on (seed, step), and the consecutive
 * windows an evaluation walks through.
 *
 * Byte-level data (data_load_bytes) uses each byte of the file as a token (vocab 256).
 * Other tokenizers build a data_set from their ids with data_from_tokens. */
#ifndef KILN_HOST_FORMATS_DATA_H
#define KILN_HOST_FORMATS_DATA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum { DATA_TRAIN = 0, DATA_VAL = 1 };

/* The batch RNG key is seed ^ DATA_RNG_SALT, so that batches are independent of the
 * weight-init and dropout draws a run makes from the same seed. */
#define DATA_RNG_SALT UINT64_C(0x6b696c6e64617461) /* "kilndata" */

typedef struct data_set {
    int32_t *tokens;  /* all tokens: [0, n_train) train, [n_train, n_tokens) validation */
    int64_t n_tokens;
    int64_t n_train;  /* n_tokens - n_tokens / 10: the last 10% (rounded down) is held out */
    int32_t vocab_size;
} data_set;

/* Reads a file as byte tokens (vocab 256). Errors (-1, a message in err) when the path is
 * missing, unreadable, a directory, or an empty file. */
int data_load_bytes(const char *path, data_set **out, char *err, size_t errlen);
/* The same, with the file's role in the messages ("the evaluation data"); data_load_bytes's
 * is "the training data". */
int data_load_bytes_as(const char *path, const char *role, data_set **out, char *err, size_t errlen);
/* The same from bytes in memory (copied). */
int data_from_bytes(const uint8_t *bytes, size_t n, data_set **out, char *err, size_t errlen);
/* From token ids (copied); every id must lie in [0, vocab_size). */
int data_from_tokens(const int32_t *tokens, int64_t n, int32_t vocab_size, data_set **out,
                     char *err, size_t errlen);
void data_free(data_set *ds);

/* The tokens of one split (DATA_TRAIN or DATA_VAL): sets *tokens and *n, returns 0, or -1
 * for an unknown split. */
int data_split(const data_set *ds, int split, const int32_t **tokens, int64_t *n);

/* Checks that a split holds at least block + 1 tokens (one window of block inputs and its
 * shifted targets). Returns 0, or -1 with a message such as "the validation split has 40
 * tokens but --block 64 needs at least 65". */
int data_check_block(const data_set *ds, int split, int64_t block, char *err, size_t errlen);

/* Fills x and y ([batch][block], row-major) with `batch` random windows of the split:
 * x[b][i] = t[s_b + i], y[b][i] = t[s_b + i + 1], where with n = the split's length,
 * key = seed ^ DATA_RNG_SALT and u(j) = kiln_rng_u32(key, step, j):
 *     s_b = ((u(2b) << 32) | u(2b + 1)) mod (n - block).
 * The draw depends only on (seed, step, b), so a resumed run sees exactly the batches it
 * would have seen. Returns 0, or -1 with a message (block too long for the split, batch
 * or block < 1). */
int data_sample_batch(const data_set *ds, int split, int64_t batch, int64_t block, uint64_t seed,
                      uint64_t step, int32_t *x, int32_t *y, char *err, size_t errlen);

/* Evaluation walks the split in consecutive, non-overlapping windows of n inputs: window s
 * predicts t[s*n + 1 .. s*n + n] from t[s*n .. s*n + n - 1]. Only full windows count, so
 * this returns floor((len - 1) / n) (0 when the split is too short; -1 for n < 1 or an
 * unknown split). */
int64_t data_windows(const data_set *ds, int split, int64_t n);
/* Fills x[n] and y[n] with window i. Returns 0, or -1 with a message when i is out of
 * range. */
int data_window(const data_set *ds, int split, int64_t n, int64_t i, int32_t *x, int32_t *y,
                char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
