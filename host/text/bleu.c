/* Corpus BLEU as sacreBLEU computes it by default (see bleu.h). Each step names the piece of
 * sacreBLEU 2.6.0 it reproduces: tokenizers/tokenizer_13a.py, tokenizers/tokenizer_re.py,
 * metrics/helpers.py (n-grams) and metrics/bleu.py (statistics and score).
 *
 * Text is handled as bytes. The 13a regexes only name ASCII characters, so running them
 * over UTF-8 bytes gives the bytes of what Python gives over characters: a multi-byte
 * character is never one of the classes, and never a digit. Whitespace is the exception:
 * Python's str.split() and str.rstrip() also split at Unicode spaces, so those are decoded. */
#include "text/bleu.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- the 13a tokenizer ---- */

/* A byte string being rewritten pass by pass. */
typedef struct text_buf {
    char *p;
    size_t n;
} text_buf;

/* The length of the whitespace character at p (n bytes left), 0 when there is none: the
 * characters for which Python's str.isspace() is true (bidi class WS, B or S, or category
 * Zs), in UTF-8. */
static size_t space_len(const unsigned char *p, size_t n) {
    unsigned char c = p[0];
    if ((c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x20)) return 1;
    if (c == 0xc2 && n >= 2 && (p[1] == 0x85 || p[1] == 0xa0)) return 2; /* U+0085, U+00A0 */
    if (n < 3) return 0;
    if (c == 0xe1 && p[1] == 0x9a && p[2] == 0x80) return 3;          /* U+1680 */
    if (c == 0xe2 && p[1] == 0x80 &&
        ((p[2] >= 0x80 && p[2] <= 0x8a) || p[2] == 0xa8 || p[2] == 0xa9 || p[2] == 0xaf))
        return 3;                                                     /* U+2000-200A, 2028, 2029, 202F */
    if (c == 0xe2 && p[1] == 0x81 && p[2] == 0x9f) return 3;          /* U+205F */
    if (c == 0xe3 && p[1] == 0x80 && p[2] == 0x80) return 3;          /* U+3000 */
    return 0;
}

/* Python's str.replace(from, to) on t: every non-overlapping occurrence, left to right.
 * to is never longer than from here, so the result fits in place. */
static void replace_all(text_buf *t, const char *from, const char *to) {
    size_t lf = strlen(from), lt = strlen(to), w = 0;
    for (size_t r = 0; r < t->n;) {
        if (t->n - r >= lf && memcmp(t->p + r, from, lf) == 0) {
            memcpy(t->p + w, to, lt);
            w += lt;
            r += lf;
        } else {
            t->p[w++] = t->p[r++];
        }
    }
    t->n = w;
}

/* r'([\{-\~\[-\` -\&\(-\+\:-\@\/])' of tokenizer_re.py: { | } ~ [ \ ] ^ _ ` space ! " # $ % &
 * ( ) * + : ; < = > ? @ / */
static int is_split_symbol(unsigned char c) {
    return (c >= '{' && c <= '~') || (c >= '[' && c <= '`') || (c >= ' ' && c <= '&') ||
           (c >= '(' && c <= '+') || (c >= ':' && c <= '@') || c == '/';
}

static int is_digit(unsigned char c) { return c >= '0' && c <= '9'; }
static int is_period_comma(unsigned char c) { return c == '.' || c == ','; }

/* One re.sub of tokenizer_re.py from t into out (which holds 2 * t->n bytes at least).
 * The patterns have one or two single-character groups; the scan is the regex engine's:
 * try at each position, and after a match go on behind it. */
enum { SPLIT_SYMBOLS, PERIOD_AFTER_NONDIGIT, PERIOD_BEFORE_NONDIGIT, DASH_AFTER_DIGIT };
static void regex_pass(int which, const text_buf *t, text_buf *out) {
    const unsigned char *s = (const unsigned char *)t->p;
    char *o = out->p;
    size_t w = 0;
    for (size_t i = 0; i < t->n;) {
        int two = i + 1 < t->n;
        if (which == SPLIT_SYMBOLS && is_split_symbol(s[i])) {            /* r' \1 ' */
            o[w++] = ' ', o[w++] = (char)s[i], o[w++] = ' ';
            i++;
        } else if (which == PERIOD_AFTER_NONDIGIT && two && !is_digit(s[i]) &&
                   is_period_comma(s[i + 1])) {                          /* ([^0-9])([\.,]) -> r'\1 \2 ' */
            o[w++] = (char)s[i], o[w++] = ' ', o[w++] = (char)s[i + 1], o[w++] = ' ';
            i += 2;
        } else if (which == PERIOD_BEFORE_NONDIGIT && two && is_period_comma(s[i]) &&
                   !is_digit(s[i + 1])) {                                /* ([\.,])([^0-9]) -> r' \1 \2' */
            o[w++] = ' ', o[w++] = (char)s[i], o[w++] = ' ', o[w++] = (char)s[i + 1];
            i += 2;
        } else if (which == DASH_AFTER_DIGIT && two && is_digit(s[i]) && s[i + 1] == '-') {
            o[w++] = (char)s[i], o[w++] = ' ', o[w++] = '-', o[w++] = ' '; /* ([0-9])(-) -> r'\1 \2 ' */
            i += 2;
        } else {
            o[w++] = (char)s[i++];
        }
    }
    out->n = w;
}

/* ' '.join(t.split()) into out (which holds t->n + 1 bytes), NUL-terminated. */
static void collapse_spaces(const text_buf *t, text_buf *out) {
    const unsigned char *s = (const unsigned char *)t->p;
    size_t w = 0;
    for (size_t i = 0; i < t->n;) {
        size_t sp = space_len(s + i, t->n - i);
        if (sp) {
            i += sp;
            continue;
        }
        if (w) out->p[w++] = ' ';
        while (i < t->n && !space_len(s + i, t->n - i)) out->p[w++] = (char)s[i++];
    }
    out->p[w] = '\0';
    out->n = w;
}

char *bleu_tokenize_13a(const char *text, size_t n, size_t *out_len) {
    if (!text && n) return NULL;
    /* SPLIT_SYMBOLS triples a line at most, each other pass doubles two bytes into four */
    if (n > (SIZE_MAX - 8) / 48) return NULL;
    size_t cap = 24 * (n + 2) + 1;
    char *a = malloc(cap), *b = malloc(cap);
    if (!a || !b) {
        free(a);
        free(b);
        return NULL;
    }
    /* tokenizer_13a.py: the language-independent part, then f' {line} ' */
    text_buf t = {a + 1, n}, u = {b, 0};
    if (n) memcpy(t.p, text, n);
    replace_all(&t, "<skipped>", "");
    replace_all(&t, "-\n", "");
    replace_all(&t, "\n", " ");
    if (memchr(t.p, '&', t.n)) {
        replace_all(&t, "&quot;", "\"");
        replace_all(&t, "&amp;", "&");
        replace_all(&t, "&lt;", "<");
        replace_all(&t, "&gt;", ">");
    }
    a[0] = ' ';
    a[t.n + 1] = ' ';
    t = (text_buf){a, t.n + 2};
    /* tokenizer_re.py: four substitutions in turn, then one space between words */
    regex_pass(SPLIT_SYMBOLS, &t, &u);
    regex_pass(PERIOD_AFTER_NONDIGIT, &u, &t);
    regex_pass(PERIOD_BEFORE_NONDIGIT, &t, &u);
    regex_pass(DASH_AFTER_DIGIT, &u, &t);
    collapse_spaces(&t, &u);
    free(a);
    if (out_len) *out_len = u.n;
    return u.p;
}

/* ---- n-gram statistics (metrics/helpers.py, BLEU._compute_segment_statistics) ---- */

typedef struct word {
    const char *p;
    size_t n;
    int32_t side, index; /* 0 hypothesis, 1 reference; the position in that sentence */
} word;

static int word_cmp(const void *a, const void *b) {
    const word *x = a, *y = b;
    size_t m = x->n < y->n ? x->n : y->n;
    int c = memcmp(x->p, y->p, m);
    return c ? c : (x->n > y->n) - (x->n < y->n);
}

/* An n-gram as the ids of its words, unused slots -1 (ids are >= 0, so orders never
 * compare equal). */
typedef struct ngram {
    int32_t id[BLEU_MAX_ORDER];
} ngram;

static int ngram_cmp(const void *a, const void *b) {
    const ngram *x = a, *y = b;
    for (int k = 0; k < BLEU_MAX_ORDER; k++)
        if (x->id[k] != y->id[k]) return (x->id[k] > y->id[k]) - (x->id[k] < y->id[k]);
    return 0;
}

static int ngram_order(const ngram *g) {
    int n = 0;
    while (n < BLEU_MAX_ORDER && g->id[n] >= 0) n++;
    return n;
}

/* Appends the words of a tokenized sentence (single spaces between words) to w. */
static int32_t split_words(const char *s, size_t n, int32_t side, word *w, size_t *count) {
    int32_t k = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && s[j] != ' ') j++;
        w[(*count)++] = (word){s + i, j - i, side, k++};
        i = j + 1;
    }
    return k;
}

/* All n-grams of order 1..4 of a sentence of len words with the given ids. */
static size_t make_ngrams(const int32_t *ids, int32_t len, ngram *out) {
    size_t m = 0;
    for (int n = 1; n <= BLEU_MAX_ORDER; n++)
        for (int32_t i = 0; i + n <= len; i++) {
            ngram g = {{-1, -1, -1, -1}};
            for (int k = 0; k < n; k++) g.id[k] = ids[i + k];
            out[m++] = g;
        }
    return m;
}

int bleu_add(bleu_stats *s, const char *hyp, size_t hyp_len, const char *ref, size_t ref_len) {
    if (!s || (!hyp && hyp_len) || (!ref && ref_len)) return -1;
    /* BLEU._preprocess_segment: tokenizer(sent.rstrip()) */
    const char *side_text[2] = {hyp, ref};
    size_t side_len[2] = {hyp_len, ref_len};
    char *tok[2] = {NULL, NULL};
    size_t tok_len[2] = {0, 0};
    for (int k = 0; k < 2; k++) {
        const unsigned char *p = (const unsigned char *)side_text[k];
        size_t end = 0;
        for (size_t i = 0; i < side_len[k];) {
            size_t sp = space_len(p + i, side_len[k] - i);
            i += sp ? sp : 1;
            if (!sp) end = i;
        }
        tok[k] = bleu_tokenize_13a(side_text[k], end, &tok_len[k]);
    }
    /* at most one word per two bytes plus one */
    size_t max_words = (tok_len[0] + tok_len[1]) / 2 + 2;
    word *words = tok[0] && tok[1] ? malloc(max_words * sizeof *words) : NULL;
    int32_t *ids = words ? malloc(max_words * sizeof *ids) : NULL;
    ngram *grams = ids ? malloc(BLEU_MAX_ORDER * max_words * sizeof *grams) : NULL;
    int rc = -1;
    if (grams) {
        size_t count = 0;
        int32_t len[2];
        len[0] = split_words(tok[0], tok_len[0], 0, words, &count);
        len[1] = split_words(tok[1], tok_len[1], 1, words, &count);
        /* the same word gets the same id on both sides */
        qsort(words, count, sizeof *words, word_cmp);
        int32_t *side_ids[2] = {ids, ids + len[0]}, id = -1;
        for (size_t i = 0; i < count; i++) {
            if (i == 0 || word_cmp(&words[i - 1], &words[i]) != 0) id++;
            side_ids[words[i].side][words[i].index] = id;
        }
        ngram *h = grams;
        size_t nh = make_ngrams(side_ids[0], len[0], h);
        ngram *r = grams + nh;
        size_t nr = make_ngrams(side_ids[1], len[1], r);
        qsort(h, nh, sizeof *h, ngram_cmp);
        qsort(r, nr, sizeof *r, ngram_cmp);
        /* each distinct hypothesis n-gram: total += its count, matches += min(count, count in
         * the reference) */
        size_t j = 0;
        for (size_t i = 0; i < nh;) {
            size_t ch = 1;
            while (i + ch < nh && ngram_cmp(&h[i], &h[i + ch]) == 0) ch++;
            while (j < nr && ngram_cmp(&r[j], &h[i]) < 0) j++;
            size_t cr = 0;
            while (j + cr < nr && ngram_cmp(&r[j + cr], &h[i]) == 0) cr++;
            int n = ngram_order(&h[i]);
            s->totals[n - 1] += (int64_t)ch;
            s->matches[n - 1] += (int64_t)(ch < cr ? ch : cr);
            i += ch;
        }
        s->sys_len += len[0];
        s->ref_len += len[1];
        rc = 0;
    }
    free(grams);
    free(ids);
    free(words);
    free(tok[0]);
    free(tok[1]);
    return rc;
}

/* ---- the score (BLEU.compute_bleu with smooth_method='exp', effective_order off) ---- */

/* utils.my_log: log floored at -9999999999 for 0 */
static double floored_log(double x) { return x == 0.0 ? -9999999999.0 : log(x); }

bleu_result bleu_score(const bleu_stats *s) {
    bleu_result r = {0};
    if (!s) return r;
    r.sys_len = s->sys_len;
    r.ref_len = s->ref_len;
    r.ratio = s->ref_len ? (double)s->sys_len / (double)s->ref_len : 0.0;
    r.bp = 1.0;
    if (s->sys_len < s->ref_len)
        r.bp = s->sys_len > 0 ? exp(1.0 - (double)s->ref_len / (double)s->sys_len) : 0.0;
    int any_match = 0;
    for (int n = 0; n < BLEU_MAX_ORDER; n++) any_match |= s->matches[n] != 0;
    if (!any_match) return r; /* sacreBLEU's early stop (#141): score and precisions 0 */
    double smooth = 1.0;
    for (int n = 0; n < BLEU_MAX_ORDER; n++) {
        if (s->totals[n] == 0) break; /* this order and the longer ones stay 0 */
        if (s->matches[n] == 0) {
            smooth *= 2;
            r.precisions[n] = 100.0 / (smooth * (double)s->totals[n]);
        } else {
            r.precisions[n] = 100.0 * (double)s->matches[n] / (double)s->totals[n];
        }
    }
    double sum = 0.0;
    for (int n = 0; n < BLEU_MAX_ORDER; n++) sum += floored_log(r.precisions[n]);
    r.score = r.bp * exp(sum / BLEU_MAX_ORDER);
    return r;
}
