/* Parallel text: the TSV reader and the length-bucketed batches. See pairs.h. */
#define _POSIX_C_SOURCE 200809L

#include "formats/pairs.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/error_printf.h"
#include "formats/file_open.h"

void pairs_free(text_pairs *p) {
    if (!p) return;
    free(p->src);
    free(p->tgt);
    free(p->src_len);
    free(p->tgt_len);
    free(p->text);
    free(p);
}

/* Checks one line (without its newline) and finds its tab. Returns 0 or -1 with the error. */
static int check_line(const char *line, size_t len, const char *name, int64_t lineno, size_t *tab,
                      char *err, size_t errlen) {
    const char *nul = memchr(line, '\0', len);
    if (nul) {
        error_printf(err, errlen, "%s:%" PRId64 ": a NUL byte at column %zu (the pairs are text)", name, lineno,
                     (size_t)(nul - line) + 1);
        return -1;
    }
    if (len == 0) {
        error_printf(err, errlen, "%s:%" PRId64 ": an empty line (one source<TAB>target pair per line)", name,
                     lineno);
        return -1;
    }
    const char *first = memchr(line, '\t', len);
    if (!first) {
        error_printf(err, errlen, "%s:%" PRId64 ": no tab between source and target", name, lineno);
        return -1;
    }
    size_t tabs = 0;
    for (const char *p = first; p; p = memchr(p + 1, '\t', len - (size_t)(p + 1 - line))) tabs++;
    if (tabs > 1) {
        error_printf(err, errlen, "%s:%" PRId64 ": %zu tabs; a pair is source<TAB>target with exactly one tab",
                     name, lineno, tabs);
        return -1;
    }
    *tab = (size_t)(first - line);
    if (*tab == 0) {
        error_printf(err, errlen, "%s:%" PRId64 ": the source (before the tab) is empty", name, lineno);
        return -1;
    }
    if (*tab == len - 1) {
        error_printf(err, errlen, "%s:%" PRId64 ": the target (after the tab) is empty", name, lineno);
        return -1;
    }
    return 0;
}

int pairs_parse(const char *buf, size_t n, const char *name, text_pairs **out, char *err, size_t errlen) {
    if (!out) return -1;
    *out = NULL;
    if (!name) name = "<pairs>";
    if (n == 0) {
        error_printf(err, errlen, "%s: empty file (expected source<TAB>target lines)", name);
        return -1;
    }
    if (!buf) {
        error_printf(err, errlen, "pairs_parse: NULL buffer");
        return -1;
    }
    /* one pair per newline, plus a last line without one */
    size_t lines = 1;
    for (const char *p = buf; (p = memchr(p, '\n', n - (size_t)(p - buf))) != NULL; p++) lines++;
    text_pairs *tp = calloc(1, sizeof *tp);
    if (tp) {
        tp->text = malloc(n + 1);
        tp->src = malloc(lines * sizeof *tp->src);
        tp->tgt = malloc(lines * sizeof *tp->tgt);
        tp->src_len = malloc(lines * sizeof *tp->src_len);
        tp->tgt_len = malloc(lines * sizeof *tp->tgt_len);
    }
    if (!tp || !tp->text || !tp->src || !tp->tgt || !tp->src_len || !tp->tgt_len) {
        pairs_free(tp);
        error_printf(err, errlen, "%s: out of memory for %zu bytes of pairs", name, n);
        return -1;
    }
    /* The copy is cut in place: each tab and line end becomes the NUL ending a string. */
    char *text = tp->text;
    memcpy(text, buf, n);
    text[n] = '\0';
    int64_t lineno = 0;
    for (size_t pos = 0; pos < n;) {
        char *line = text + pos;
        char *nl = memchr(line, '\n', n - pos);
        size_t len = nl ? (size_t)(nl - line) : n - pos;
        pos += len + (nl ? 1 : 0);
        lineno++;
        if (len && line[len - 1] == '\r') len--; /* CRLF */
        if (len == 0 && pos >= n) break;          /* an empty last line */
        size_t tab;
        if (check_line(line, len, name, lineno, &tab, err, errlen) != 0) {
            pairs_free(tp);
            return -1;
        }
        line[tab] = '\0';
        line[len] = '\0';
        tp->src[tp->count] = line;
        tp->src_len[tp->count] = tab;
        tp->tgt[tp->count] = line + tab + 1;
        tp->tgt_len[tp->count] = len - tab - 1;
        tp->count++;
    }
    if (tp->count == 0) {
        pairs_free(tp);
        error_printf(err, errlen, "%s: no pairs (expected source<TAB>target lines)", name);
        return -1;
    }
    *out = tp;
    return 0;
}

int pairs_load(const char *path, text_pairs **out, char *err, size_t errlen) {
    if (!out) return -1;
    *out = NULL;
    if (!path) {
        error_printf(err, errlen, "pairs_load: NULL path");
        return -1;
    }
    char *bytes;
    size_t n;
    if (file_read_all(path, "the pairs (a TSV file)", &bytes, &n, err, errlen) != 0) return -1;
    int rc = pairs_parse(bytes, n, path, out, err, errlen);
    free(bytes);
    return rc;
}

/* ---- batches ---- */

typedef struct length_key {
    int32_t src, tgt;
    int64_t index;
} length_key;

static int key_cmp(const void *a, const void *b) {
    const length_key *x = a, *y = b;
    if (x->src != y->src) return x->src < y->src ? -1 : 1;
    if (x->tgt != y->tgt) return x->tgt < y->tgt ? -1 : 1;
    return (x->index > y->index) - (x->index < y->index);
}

int pairs_make_batches(const int32_t *src_len, const int32_t *tgt_len, int64_t count, int64_t max_tokens,
                       int64_t **starts, int64_t **order, int64_t *n_batches, char *err, size_t errlen) {
    if (!starts || !order || !n_batches) {
        error_printf(err, errlen, "pairs_make_batches: NULL output");
        return -1;
    }
    *starts = NULL;
    *order = NULL;
    *n_batches = 0;
    if (count < 0 || (count > 0 && (!src_len || !tgt_len))) {
        error_printf(err, errlen, "pairs_make_batches: %" PRId64 " examples without lengths", count);
        return -1;
    }
    if (max_tokens < 1) {
        error_printf(err, errlen, "the batch size in tokens (%" PRId64 ") must be at least 1", max_tokens);
        return -1;
    }
    if ((uint64_t)count >= SIZE_MAX / sizeof(length_key)) {
        error_printf(err, errlen, "%" PRId64 " examples are too many for this machine", count);
        return -1;
    }
    for (int64_t i = 0; i < count; i++) {
        if (src_len[i] < 0 || tgt_len[i] < 0) {
            error_printf(err, errlen, "example %" PRId64 " has a negative length (%" PRId32 ", %" PRId32 ")", i,
                         src_len[i], tgt_len[i]);
            return -1;
        }
    }
    size_t n = (size_t)count;
    length_key *keys = malloc((n ? n : 1) * sizeof *keys);
    int64_t *ord = malloc((n ? n : 1) * sizeof *ord);
    int64_t *st = malloc((n + 1) * sizeof *st);
    if (!keys || !ord || !st) {
        free(keys);
        free(ord);
        free(st);
        error_printf(err, errlen, "out of memory batching %" PRId64 " examples", count);
        return -1;
    }
    for (size_t i = 0; i < n; i++) keys[i] = (length_key){src_len[i], tgt_len[i], (int64_t)i};
    qsort(keys, n, sizeof *keys, key_cmp);
    int64_t batches = 0, oversized = 0, longest = 0;
    size_t i = 0;
    while (i < n) {
        st[batches++] = (int64_t)i;
        int64_t max_src = 0, max_tgt = 0, rows = 0;
        while (i < n) {
            int64_t s = keys[i].src > max_src ? keys[i].src : max_src;
            int64_t t = keys[i].tgt > max_tgt ? keys[i].tgt : max_tgt;
            int64_t width = s + t;
            /* (rows + 1) * width <= max_tokens, without overflow */
            int fits = width == 0 || rows + 1 <= max_tokens / width;
            if (!fits && rows > 0) break;
            if (!fits) { /* alone and still too long: its own batch */
                oversized++;
                if (width > longest) longest = width;
            }
            ord[i] = keys[i].index;
            max_src = s, max_tgt = t, rows++, i++;
            if (!fits) break;
        }
    }
    st[batches] = (int64_t)n;
    free(keys);
    *starts = st;
    *order = ord;
    *n_batches = batches;
    if (oversized)
        error_printf(err, errlen, "%" PRId64 " example%s longer than the %" PRId64 "-token batch alone (the "
                     "longest: %" PRId64 " tokens): each is a batch of its own", oversized,
                     oversized == 1 ? " is" : "s are", max_tokens, longest);
    return oversized > 0 ? (int)(oversized > INT32_MAX ? INT32_MAX : oversized) : 0;
}
