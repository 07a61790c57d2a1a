/* Parallel text for translation models: a TSV of (source, target) pairs, and the
 * length-bucketed batches training draws from them.
 *
 * The file: one pair per line, source TAB target. Lines end in LF or CRLF; the last line
 * may lack its newline, and an empty last line is ignored. Everything else is data or an
 * error naming the line ("pairs.tsv:12: no tab between source and target"): a line
 * without a tab, with more than one tab, with an empty source or target, or holding a NUL
 * byte; an empty file, or one without a pair. Bytes need not be valid UTF-8 (the tokenizers
 * work on bytes). */
#ifndef KILN_HOST_FORMATS_PAIRS_H
#define KILN_HOST_FORMATS_PAIRS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* count >= 1 pairs; src[i] and tgt[i] are NUL-terminated (they hold no NUL), src_len[i] and
 * tgt_len[i] >= 1 their lengths in bytes, in file order. */
typedef struct text_pairs {
    char **src, **tgt;
    size_t *src_len, *tgt_len;
    int64_t count;
    char *text; /* the storage the strings point into (the caller does not touch it) */
} text_pairs;

/* Reads and parses a file (errors: "PATH: cannot open ...", "PATH:LINE: ...", "PATH: empty
 * file"). Returns 0, or -1 with one line in err and *out NULL. */
int pairs_load(const char *path, text_pairs **out, char *err, size_t errlen);
/* The same from n bytes in memory (copied); name is the file's name in messages. */
int pairs_parse(const char *buf, size_t n, const char *name, text_pairs **out, char *err, size_t errlen);
void pairs_free(text_pairs *p);

/* Length-bucketed batches: groups the count examples (token counts src_len[i], tgt_len[i]
 * >= 0, after tokenization) into batches of at most max_tokens tokens, where a batch's cost
 * is rows * (longest source + longest target): the padded size of its two tensors.
 *
 * The examples are sorted by (src_len, tgt_len, index) into *order (a permutation of
 * 0..count-1), which is then cut into consecutive runs greedily: a batch takes the next
 * example while its cost stays within max_tokens. Batch b is order[starts[b] ..
 * starts[b+1]), for b < *n_batches; starts[0] = 0 and starts[*n_batches] = count. So:
 *   - every example lands in exactly one batch;
 *   - a batch's cost is <= max_tokens, but for an example whose own src_len + tgt_len
 *     exceeds max_tokens: it is a batch alone;
 *   - each batch is maximal: adding the example that follows it in order would exceed
 *     max_tokens;
 *   - the result depends only on the inputs (no RNG); the caller shuffles batches per epoch.
 * *starts (n_batches + 1 entries) and *order (count entries) are malloc'd for the caller to
 * free (also when count is 0: then n_batches is 0 and starts holds one 0).
 *
 * Returns the number of examples longer than max_tokens alone (0 normally; when > 0, err
 * holds one line describing them, for the caller to print as a warning), or -1 with a
 * message (max_tokens < 1, a negative length, count < 0, out of memory). */
int pairs_make_batches(const int32_t *src_len, const int32_t *tgt_len, int64_t count, int64_t max_tokens,
                       int64_t **starts, int64_t **order, int64_t *n_batches, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
