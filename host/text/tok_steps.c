/* A version 2 tokenizer's pipeline, as Hugging Face's tokenizers library runs the
 * components of a tokenizer.json (docs/tokenizers.md names the semantics of each):
 * normalizers change the whole text, pre-tokenizers cut it into pieces (each step cuts
 * every piece of the step before), and decoders turn each token back into bytes. */
#include <stdlib.h>
#include <string.h>

#include "formats/error_printf.h"
#include "text/pretokenize.h"
#include "text/regex.h"
#include "text/tokenizer_internal.h"
#include "text/unicode_nfc.h"

int tok_buf_put(tok_buf *b, const void *s, size_t n) {
    if (b->failed) return -1;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? 2 * b->cap : 256;
        while (cap < b->len + n + 1) cap *= 2;
        uint8_t *grown = realloc(b->p, cap);
        if (!grown) return b->failed = 1, -1;
        b->p = grown, b->cap = cap;
    }
    if (n && s) memcpy(b->p + b->len, s, n); /* s NULL: room for n bytes the caller fills */
    b->len += n;
    b->p[b->len] = 0; /* always a C string too */
    return 0;
}

void tok_step_clear(tok_step *step) {
    free(step->a);
    free(step->b);
    regex_free(step->re);
    memset(step, 0, sizeof *step);
}

/* A literal as a pattern: every ASCII character that is not a letter or digit escaped. */
static char *literal_pattern(const char *s, size_t n, size_t *len) {
    char *p = malloc(2 * n + 1);
    if (!p) return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x80 && !((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))) p[k++] = '\\';
        p[k++] = (char)c;
    }
    *len = k;
    return p;
}

int tok_step_compile(tok_step *step, char *err, size_t errlen) {
    static const char digit[] = "\\p{N}";
    const char *src = step->a;
    size_t len = step->a_len;
    char *owned = NULL;
    if (step->kind == STEP_DIGITS) {
        src = digit, len = strlen(digit);
    } else if (!step->regex_source) {
        if (!(owned = literal_pattern(step->a, step->a_len, &len))) {
            error_printf(err, errlen, "out of memory");
            return -1;
        }
        src = owned;
    }
    step->re = regex_compile(src, len, err, errlen);
    free(owned);
    return step->re ? 0 : -1;
}

static int step_needs_regex(const tok_step *st) {
    return st->kind == STEP_REPLACE || st->kind == STEP_SPLIT || st->kind == STEP_DIGITS ||
           (st->kind == STEP_METASPACE && st->split);
}

int tok_add_step(tokenizer *t, int stage, tok_step *step, char *err, size_t errlen) {
    if (!step->re && step_needs_regex(step) && tok_step_compile(step, err, errlen)) {
        tok_step_clear(step);
        return -1;
    }
    tok_step *grown = realloc(t->steps[stage], (size_t)(t->n_steps[stage] + 1) * sizeof *grown);
    if (!grown) {
        tok_step_clear(step);
        error_printf(err, errlen, "out of memory");
        return -1;
    }
    t->steps[stage] = grown;
    t->steps[stage][t->n_steps[stage]++] = *step;
    return 0;
}

/* Every match of the step's pattern in s[0..n) replaced by its content. */
static int replace_all(const tok_step *st, const uint8_t *s, size_t n, tok_buf *out) {
    size_t pos = 0, a, b;
    int found;
    while (pos < n && (found = regex_search(st->re, s, n, pos, &a, &b)) != 0) {
        if (found < 0) return -1;
        if (b == a) { /* an empty match replaces nothing: keep the character after it */
            if (a >= n) break;
            b = a + 1;
            while (b < n && (s[b] & 0xC0) == 0x80) b++;
            tok_buf_put(out, s + pos, b - pos);
        } else {
            tok_buf_put(out, s + pos, a - pos);
            tok_buf_put(out, st->b, st->b_len);
        }
        pos = b;
    }
    return tok_buf_put(out, s + pos, n - pos);
}

/* The normalizers, in order, on the whole text. */
static int normalize(const tokenizer *t, const uint8_t *text, size_t n, tok_buf *out) {
    tok_buf cur = {0};
    int rc = tok_buf_put(&cur, text, n);
    for (int i = 0; i < t->n_steps[TOK_STAGE_NORMALIZER] && !rc; i++) {
        const tok_step *st = &t->steps[TOK_STAGE_NORMALIZER][i];
        tok_buf next = {0};
        if (st->kind == STEP_NFC) {
            rc = unicode_nfc(cur.p, cur.len, &next);
        } else if (st->kind == STEP_PREPEND) {
            if (cur.len) tok_buf_put(&next, st->a, st->a_len);
            rc = tok_buf_put(&next, cur.p, cur.len);
        } else { /* STEP_REPLACE */
            rc = replace_all(st, cur.p, cur.len, &next);
        }
        free(cur.p);
        cur = next;
    }
    if (rc) free(cur.p);
    else *out = cur;
    return rc;
}

static int piece_add(tok_pieces *ps, const uint8_t *s1, size_t n1, const uint8_t *s2, size_t n2) {
    if (n1 + n2 == 0) return 0; /* empty pieces are dropped, as the library drops them */
    if (ps->n == ps->cap) {
        size_t cap = ps->cap ? 2 * ps->cap : 64;
        size_t *off = realloc(ps->off, cap * sizeof *off), *len = off ? realloc(ps->len, cap * sizeof *len) : NULL;
        if (off) ps->off = off;
        if (!len) return ps->failed = 1, -1;
        ps->len = len, ps->cap = cap;
    }
    ps->off[ps->n] = ps->text.len;
    ps->len[ps->n++] = n1 + n2;
    tok_buf_put(&ps->text, s1, n1);
    return tok_buf_put(&ps->text, s2, n2);
}

typedef struct segment {
    size_t start, end;
    int match;
} segment;

/* s[0..n) cut at the matches of st->re, the parts joined by the split behaviour (the
 * library's SplitDelimiterBehavior), appended to out. */
static int split_piece(const tok_step *st, tok_split_behaviour behaviour, const uint8_t *s, size_t n, tok_pieces *out) {
    segment *seg = NULL;
    size_t n_seg = 0, cap = 0, pos = 0, prev = 0, a, b;
    int rc = 0, found;
    while (pos <= n && (found = regex_search(st->re, s, n, pos, &a, &b)) != 0) {
        if (found < 0 || n_seg + 2 > cap) {
            segment *grown = found < 0 ? NULL : realloc(seg, (cap = 2 * cap + 16) * sizeof *seg);
            if (!grown) {
                free(seg);
                return -1;
            }
            seg = grown;
        }
        if (a == b) { /* an empty match cuts nothing */
            pos = a + 1;
            continue;
        }
        if (a > prev) seg[n_seg++] = (segment){prev, a, st->invert};
        seg[n_seg++] = (segment){a, b, !st->invert};
        prev = pos = b;
    }
    if (prev < n) {
        segment *grown = n_seg < cap ? seg : realloc(seg, (cap + 1) * sizeof *seg);
        if (!grown) {
            free(seg);
            return -1;
        }
        seg = grown;
        seg[n_seg++] = (segment){prev, n, st->invert};
    }
    /* join by behaviour into runs [start, end), then emit */
    size_t run_start = 0, run_end = 0;
    int have = 0, prev_match = 0;
    for (size_t i = 0; i < n_seg && !rc; i++) {
        segment g = seg[i];
        int join;
        if (behaviour == SPLIT_REMOVED && g.match) continue;
        if (behaviour == SPLIT_MERGED_PREVIOUS) join = g.match && !prev_match;
        else if (behaviour == SPLIT_CONTIGUOUS) join = g.match == prev_match;
        else if (behaviour == SPLIT_MERGED_NEXT) join = prev_match && !g.match; /* a match leads what follows */
        else join = 0;
        if (join && have) {
            run_end = g.end;
        } else {
            if (have) rc = piece_add(out, s + run_start, run_end - run_start, NULL, 0);
            run_start = g.start, run_end = g.end, have = 1;
        }
        prev_match = g.match;
    }
    if (have && !rc) rc = piece_add(out, s + run_start, run_end - run_start, NULL, 0);
    free(seg);
    return rc;
}

/* Metaspace: spaces become the replacement, a prefix as the scheme says, then a cut before
 * each replacement (MergedWithNext). */
static int metaspace_piece(const tok_step *st, const uint8_t *s, size_t n, int first, tok_pieces *out) {
    tok_buf m = {0};
    int starts = n >= st->a_len && !memcmp(s, st->a, st->a_len);
    if (!starts && (st->prepend == PREPEND_ALWAYS || (st->prepend == PREPEND_FIRST && first)))
        tok_buf_put(&m, st->a, st->a_len);
    for (size_t i = 0; i < n; i++)
        if (s[i] == ' ') tok_buf_put(&m, st->a, st->a_len);
        else tok_buf_put(&m, s + i, 1);
    int rc = tok_buf_put(&m, NULL, 0);
    if (!rc) rc = st->split ? split_piece(st, SPLIT_MERGED_NEXT, m.p, m.len, out) : piece_add(out, m.p, m.len, NULL, 0);
    free(m.p);
    return rc;
}

/* ByteLevel: a space in front unless there is one, then GPT-2's pieces (pretokenize.h). */
static int bytelevel_piece(const tok_step *st, const uint8_t *s, size_t n, tok_pieces *out) {
    static const uint8_t space = ' ';
    int prefix = st->prefix_space && !(n && s[0] == ' ');
    if (!st->use_regex) return piece_add(out, &space, prefix ? 1 : 0, s, n);
    if (!prefix) {
        for (size_t pos = 0, end; pos < n; pos = end)
            if (piece_add(out, s + pos, (end = pretokenize_next(s, n, pos)) - pos, NULL, 0)) return -1;
        return 0;
    }
    tok_buf m = {0};
    tok_buf_put(&m, &space, 1);
    int rc = tok_buf_put(&m, s, n);
    for (size_t pos = 0, end; pos < m.len && !rc; pos = end)
        rc = piece_add(out, m.p + pos, (end = pretokenize_next(m.p, m.len, pos)) - pos, NULL, 0);
    free(m.p);
    return rc;
}

static int pretokenize_step(const tok_step *st, const tok_pieces *in, tok_pieces *out) {
    int rc = 0;
    for (size_t i = 0; i < in->n && !rc; i++) {
        const uint8_t *s = in->text.p + in->off[i];
        size_t n = in->len[i];
        switch (st->kind) {
        case STEP_SPLIT: rc = split_piece(st, st->behaviour, s, n, out); break;
        case STEP_DIGITS:
            rc = split_piece(st, st->individual ? SPLIT_ISOLATED : SPLIT_CONTIGUOUS, s, n, out);
            break;
        case STEP_METASPACE: rc = metaspace_piece(st, s, n, i == 0, out); break;
        default: rc = bytelevel_piece(st, s, n, out); break;
        }
    }
    return rc || out->failed || out->text.failed ? -1 : 0;
}

void tok_pieces_free(tok_pieces *p) {
    free(p->text.p);
    free(p->off);
    free(p->len);
    memset(p, 0, sizeof *p);
}

int tok_pretokenize(const tokenizer *t, const uint8_t *text, size_t n, tok_pieces *out) {
    memset(out, 0, sizeof *out);
    tok_buf normal = {0};
    if (normalize(t, text, n, &normal)) return -1;
    tok_pieces cur = {0};
    int rc = piece_add(&cur, normal.p, normal.len, NULL, 0);
    free(normal.p);
    for (int i = 0; i < t->n_steps[TOK_STAGE_PRETOKENIZER] && !rc; i++) {
        tok_pieces next = {0};
        rc = pretokenize_step(&t->steps[TOK_STAGE_PRETOKENIZER][i], &cur, &next);
        tok_pieces_free(&cur);
        cur = next;
    }
    if (rc || cur.failed || cur.text.failed) {
        tok_pieces_free(&cur);
        return -1;
    }
    *out = cur;
    return 0;
}

/* Up to st->start leading and st->stop trailing copies of st->a removed from b. */
static void strip(const tok_step *st, tok_buf *b) {
    size_t lo = 0, hi = b->len, k = st->a_len;
    for (int i = 0; i < st->start && k && hi - lo >= k && !memcmp(b->p + lo, st->a, k); i++) lo += k;
    for (int i = 0; i < st->stop && k && hi - lo >= k && !memcmp(b->p + hi - k, st->a, k); i++) hi -= k;
    memmove(b->p, b->p + lo, hi - lo);
    b->len = hi - lo;
}

void tok_decode_append(const tokenizer *t, int32_t id, int first, tok_buf *out) {
    const uint8_t *s = t->blob + t->offset[id];
    size_t n = t->length[id];
    if (t->kind[id] == TOKDEF_SPECIAL || !t->n_steps[TOK_STAGE_DECODER]) {
        tok_buf_put(out, s, n);
        return;
    }
    tok_buf cur = {0};
    tok_buf_put(&cur, s, n);
    int fused = 0;
    for (int i = 0; i < t->n_steps[TOK_STAGE_DECODER] && !cur.failed; i++) {
        const tok_step *st = &t->steps[TOK_STAGE_DECODER][i];
        if (st->kind == STEP_FUSE) {
            fused = 1;
        } else if (st->kind == STEP_STRIP && (first || !fused)) {
            strip(st, &cur);
        } else if (st->kind == STEP_REPLACE && t->kind[id] != TOKDEF_BYTE) {
            tok_buf next = {0};
            if (replace_all(st, cur.p, cur.len, &next)) next.failed = 1;
            free(cur.p);
            cur = next;
        } /* ByteLevel and ByteFallback: the token's bytes are already what they decode to */
    }
    if (cur.failed) out->failed = 1;
    else tok_buf_put(out, cur.p, cur.len);
    free(cur.p);
}
