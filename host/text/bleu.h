/* Corpus BLEU exactly as sacreBLEU 2.x computes it by default (BLEU() with tokenize='13a',
 * mixed case, n-grams up to 4, smooth_method='exp', effective_order off), for one reference
 * per hypothesis, in C: `kiln eval` prints it for a translation model.
 *
 * Usage: zero a bleu_stats, bleu_add every (hypothesis, reference) pair of the corpus, then
 * bleu_score once. Sentences are bytes (UTF-8 expected, not required); each is stripped of
 * trailing whitespace as Python's str.rstrip() does, then tokenized by 13a, then split into
 * words on the whitespace Python's str.split() knows (ASCII and Unicode spaces such as
 * U+00A0 and U+3000).
 *
 * tests/test_host_bleu.c compares every figure with sacreBLEU's own output
 * (tests/bleu_reference.py). */
#ifndef KILN_HOST_TEXT_BLEU_H
#define KILN_HOST_TEXT_BLEU_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define BLEU_MAX_ORDER 4

/* The corpus's sufficient statistics: summed over sentence pairs. matches[n-1] counts the
 * hypothesis n-grams found in the reference (each clipped to its count there), totals[n-1]
 * all hypothesis n-grams; sys_len and ref_len are the word counts. */
typedef struct bleu_stats {
    int64_t matches[BLEU_MAX_ORDER], totals[BLEU_MAX_ORDER], sys_len, ref_len;
} bleu_stats;

/* score in [0, 100]; precisions in percent (exp-smoothed where an order has no match); bp
 * the brevity penalty; ratio = sys_len / ref_len (0 when ref_len is 0). */
typedef struct bleu_result {
    double score, precisions[BLEU_MAX_ORDER], bp, ratio;
    int64_t sys_len, ref_len;
} bleu_result;

/* Adds one sentence pair (13a-tokenized inside). Returns 0, or -1 when out of memory or
 * given NULL (s unchanged then). hyp and ref need not be NUL-terminated. */
int bleu_add(bleu_stats *s, const char *hyp, size_t hyp_len, const char *ref, size_t ref_len);

/* The corpus score of the statistics gathered so far (sacreBLEU's BLEU.compute_bleu). */
bleu_result bleu_score(const bleu_stats *s);

/* sacreBLEU's Tokenizer13a alone (without BLEU's rstrip): "<skipped>" removed, "-\n"
 * joined, "\n" a space, &quot; &amp; &lt; &gt; unescaped (in that order, once each),
 * punctuation and symbols split off, '.' and ',' split off unless between digits, '-' split
 * off after a digit, whitespace runs collapsed to one space and trimmed. Returns a
 * NUL-terminated string the caller frees (its length in *out_len when out_len is not NULL),
 * or NULL when out of memory. */
char *bleu_tokenize_13a(const char *text, size_t n, size_t *out_len);

#ifdef __cplusplus
}
#endif
#endif
