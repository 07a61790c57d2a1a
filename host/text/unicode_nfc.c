/* NFC by the book (Unicode's UAX #15): each code point replaced by its full canonical
 * decomposition, each run of non-starters put in the order of their combining classes
 * (stable), then each character composed with the last starter before it when nothing
 * between them blocks it (a starter, or a character of the same or a higher class). Text
 * with no code point at or above U+0300 is its own NFC and is copied as it is. */
#include <stdlib.h>
#include <string.h>

#include "formats/utf8.h"
#include "text/unicode_nfc.h"

#include "text/unicode_nfc_table.inc"

enum { SBASE = 0xAC00, LBASE = 0x1100, VBASE = 0x1161, TBASE = 0x11A7, LCOUNT = 19, VCOUNT = 21, TCOUNT = 28,
       NCOUNT = VCOUNT * TCOUNT, SCOUNT = LCOUNT * NCOUNT };
/* A byte that is not UTF-8, kept apart from every code point. */
#define NFC_RAW 0x80000000u

static unsigned ccc_of(uint32_t cp) {
    size_t lo = 0, hi = sizeof nfc_ccc / sizeof nfc_ccc[0];
    if (cp < 0x300 || (cp & NFC_RAW)) return 0;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (nfc_ccc[mid].hi < cp) lo = mid + 1;
        else hi = mid;
    }
    return lo < sizeof nfc_ccc / sizeof nfc_ccc[0] && nfc_ccc[lo].lo <= cp ? nfc_ccc[lo].ccc : 0;
}

static const struct nfc_decomp *decomp_of(uint32_t cp) {
    size_t lo = 0, hi = sizeof nfc_decomp / sizeof nfc_decomp[0];
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (nfc_decomp[mid].cp < cp) lo = mid + 1;
        else hi = mid;
    }
    return lo < sizeof nfc_decomp / sizeof nfc_decomp[0] && nfc_decomp[lo].cp == cp ? &nfc_decomp[lo] : NULL;
}

/* The primary composite of a and b, or 0. */
static uint32_t compose(uint32_t a, uint32_t b) {
    if (a >= LBASE && a < LBASE + LCOUNT && b >= VBASE && b < VBASE + VCOUNT)
        return SBASE + ((a - LBASE) * VCOUNT + (b - VBASE)) * TCOUNT;
    if (a >= SBASE && a < SBASE + SCOUNT && (a - SBASE) % TCOUNT == 0 && b > TBASE && b < TBASE + TCOUNT)
        return a + (b - TBASE);
    size_t lo = 0, hi = sizeof nfc_pairs / sizeof nfc_pairs[0];
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (nfc_pairs[mid].first < a || (nfc_pairs[mid].first == a && nfc_pairs[mid].second < b)) lo = mid + 1;
        else hi = mid;
    }
    return lo < sizeof nfc_pairs / sizeof nfc_pairs[0] && nfc_pairs[lo].first == a && nfc_pairs[lo].second == b
               ? nfc_pairs[lo].composite
               : 0;
}

typedef struct cp_list {
    uint32_t *cp;
    size_t n, cap;
} cp_list;

static int cp_push(cp_list *l, uint32_t cp) {
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 256;
        uint32_t *grown = realloc(l->cp, cap * sizeof *grown);
        if (!grown) return -1;
        l->cp = grown, l->cap = cap;
    }
    l->cp[l->n++] = cp;
    return 0;
}

/* The full canonical decomposition of s, non-starters in canonical order. */
static int decompose(const uint8_t *s, size_t n, cp_list *l) {
    for (size_t pos = 0; pos < n;) {
        uint32_t cp;
        int len = utf8_decode(s + pos, n - pos, &cp);
        if (len == 0) cp = NFC_RAW | s[pos], len = 1;
        pos += (size_t)len;
        const struct nfc_decomp *d = cp & NFC_RAW ? NULL : decomp_of(cp);
        int rc = 0;
        if (cp >= SBASE && cp < SBASE + SCOUNT) {
            uint32_t i = cp - SBASE;
            rc = cp_push(l, LBASE + i / NCOUNT) || cp_push(l, VBASE + (i % NCOUNT) / TCOUNT) ||
                 (i % TCOUNT && cp_push(l, TBASE + i % TCOUNT));
        } else if (d) {
            for (int k = 0; k < d->len && !rc; k++) rc = cp_push(l, nfc_decomp_cps[d->at + k]);
        } else {
            rc = cp_push(l, cp);
        }
        if (rc) return -1;
    }
    for (size_t i = 1; i < l->n; i++) { /* insertion sort within runs of non-starters: stable */
        uint32_t c = l->cp[i];
        unsigned cc = ccc_of(c);
        size_t j = i;
        while (cc && j > 0 && ccc_of(l->cp[j - 1]) > cc) l->cp[j] = l->cp[j - 1], j--;
        l->cp[j] = c;
    }
    return 0;
}

static int put_cp(tok_buf *out, uint32_t cp) {
    uint8_t b[4];
    size_t n;
    if (cp & NFC_RAW) b[0] = (uint8_t)cp, n = 1;
    else if (cp < 0x80) b[0] = (uint8_t)cp, n = 1;
    else if (cp < 0x800) b[0] = (uint8_t)(0xC0 | cp >> 6), b[1] = (uint8_t)(0x80 | (cp & 0x3F)), n = 2;
    else if (cp < 0x10000)
        b[0] = (uint8_t)(0xE0 | cp >> 12), b[1] = (uint8_t)(0x80 | (cp >> 6 & 0x3F)), b[2] = (uint8_t)(0x80 | (cp & 0x3F)), n = 3;
    else
        b[0] = (uint8_t)(0xF0 | cp >> 18), b[1] = (uint8_t)(0x80 | (cp >> 12 & 0x3F)),
        b[2] = (uint8_t)(0x80 | (cp >> 6 & 0x3F)), b[3] = (uint8_t)(0x80 | (cp & 0x3F)), n = 4;
    return tok_buf_put(out, b, n);
}

int unicode_nfc(const uint8_t *s, size_t n, tok_buf *out) {
    size_t i = 0;
    while (i < n && s[i] < 0xCC) i++; /* U+0300 is the first code point that can change */
    if (i == n) return tok_buf_put(out, s, n);
    cp_list l = {0};
    if (decompose(s, n, &l)) {
        free(l.cp);
        return -1;
    }
    size_t w = 0;           /* composed code points are written back into l.cp[0..w) */
    long starter = -1;      /* index in [0, w) of the last starter */
    unsigned last_cc = 0;   /* class of l.cp[w - 1] */
    for (size_t r = 0; r < l.n; r++) {
        uint32_t c = l.cp[r];
        unsigned cc = ccc_of(c);
        if (starter >= 0 && !(c & NFC_RAW) && !(l.cp[starter] & NFC_RAW)) {
            int blocked = (size_t)starter != w - 1 && (last_cc == 0 || last_cc >= cc);
            uint32_t comp = blocked ? 0 : compose(l.cp[starter], c);
            if (comp) {
                l.cp[starter] = comp;
                continue;
            }
        }
        if (cc == 0) starter = (long)w;
        l.cp[w++] = c;
        last_cc = cc;
    }
    int rc = 0;
    for (size_t k = 0; k < w && !rc; k++) rc = put_cp(out, l.cp[k]);
    free(l.cp);
    return rc;
}
