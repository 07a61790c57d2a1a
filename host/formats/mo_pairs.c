/* Which .mo entries become translation pairs, and how they are cleaned. See mo_pairs.h. */
#include "formats/mo_pairs.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "formats/utf8.h"

const char *mo_pair_verdict_name(mo_pair_verdict v) {
    static const char *names[MO_PAIR_N_VERDICTS] = {
        [MO_PAIR_KEPT] = "kept",
        [MO_PAIR_HEADER] = "header",
        [MO_PAIR_PLURAL] = "plural",
        [MO_PAIR_UNTRANSLATED] = "untranslated",
        [MO_PAIR_MULTILINE] = "multi-line",
        [MO_PAIR_CONTROL] = "tab or control character",
        [MO_PAIR_NOT_UTF8] = "not UTF-8",
        [MO_PAIR_NO_WORDS] = "placeholders or punctuation only",
    };
    return (int)v >= 0 && v < MO_PAIR_N_VERDICTS ? names[v] : "unknown";
}

mo_encoding mo_catalog_encoding(const mo_catalog *c) {
    static const char *utf8[] = {"", "utf-8", "utf8", "us-ascii", "ascii", "charset"};
    static const char *latin1[] = {"iso-8859-1", "iso8859-1", "latin1", "latin-1"};
    for (size_t i = 0; i < sizeof utf8 / sizeof utf8[0]; i++)
        if (!strcmp(c->charset, utf8[i])) return MO_UTF8;
    for (size_t i = 0; i < sizeof latin1 / sizeof latin1[0]; i++)
        if (!strcmp(c->charset, latin1[i])) return MO_LATIN1;
    return MO_UNSUPPORTED;
}

static int is_ascii_alnum(unsigned char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* The length of the printf or gettext placeholder at s[0] == '%' (0 when it is none):
 * %[N$][flags][width][.precision][length]conversion, %%, or %<PRIxx>. */
static size_t percent_directive(const char *s, size_t n) {
    size_t i = 1;
    if (i < n && s[i] == '%') return 2;
    if (i < n && s[i] == '<') {
        const char *close = memchr(s + i, '>', n - i);
        return close ? (size_t)(close - s) + 1 : 0;
    }
    size_t digits = i;
    while (digits < n && s[digits] >= '0' && s[digits] <= '9') digits++;
    if (digits > i && digits < n && s[digits] == '$') i = digits + 1;
    while (i < n && strchr("-+ #0'I", s[i]) && s[i]) i++;
    while (i < n && ((s[i] >= '0' && s[i] <= '9') || s[i] == '*' || s[i] == '$')) i++;
    if (i < n && s[i] == '.') {
        i++;
        while (i < n && ((s[i] >= '0' && s[i] <= '9') || s[i] == '*' || s[i] == '$')) i++;
    }
    while (i < n && strchr("hlLqjzZt", s[i]) && s[i]) i++;
    if (i < n && s[i] && strchr("diouxXeEfFgGaAcCsSpnm", s[i])) return i + 1;
    return 0;
}

int mo_text_has_word(const char *text, size_t n) {
    const unsigned char *s = (const unsigned char *)text;
    for (size_t i = 0; i < n;) {
        if (s[i] == '%') {
            size_t skip = percent_directive(text + i, n - i);
            if (skip) {
                i += skip;
                continue;
            }
        }
        if (s[i] == '{') { /* {0}, {name}: a placeholder when closed before any space */
            size_t j = i + 1;
            while (j < n && j - i < 64 && s[j] != '}' && s[j] != ' ' && s[j] != '{') j++;
            if (j < n && s[j] == '}') {
                i = j + 1;
                continue;
            }
        }
        uint32_t cp;
        int len = utf8_decode(s + i, n - i, &cp);
        if (len == 0) { /* an invalid byte: no letter */
            i++;
            continue;
        }
        if (cp < 0x80 ? ((cp | 0x20) >= 'a' && (cp | 0x20) <= 'z')
                      : cp >= 0xc0 && cp != 0xd7 && cp != 0xf7 && !(cp >= 0x2000 && cp <= 0x2bff) &&
                            !(cp >= 0x3000 && cp <= 0x303f))
            return 1;
        i += (size_t)len;
    }
    return 0;
}

/* A malloc'd, NUL-terminated copy of s (n bytes), converted from ISO-8859-1 when latin1. */
static char *copy_text(const char *s, size_t n, int latin1, size_t *out_len) {
    char *out = malloc(2 * n + 1);
    if (!out) return NULL;
    size_t w = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (latin1 && c >= 0x80) {
            out[w++] = (char)(0xc0 | c >> 6);
            out[w++] = (char)(0x80 | (c & 0x3f));
        } else {
            out[w++] = (char)c;
        }
    }
    out[w] = '\0';
    *out_len = w;
    return out;
}

/* Removes leading and trailing '\n' in place. */
static void trim_newlines(char *s, size_t *n) {
    size_t start = 0, end = *n;
    while (start < end && s[start] == '\n') start++;
    while (end > start && s[end - 1] == '\n') end--;
    memmove(s, s + start, end - start);
    s[end - start] = '\0';
    *n = end - start;
}

static int has_control(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f) return 1;
    return 0;
}

static int is_word_byte(unsigned char c) { return is_ascii_alnum(c) || c == '_' || c >= 0x80; }

/* The positions of '_' directly before a letter or digit (ASCII, or any non-ASCII byte:
 * the lead byte of a letter such as 'Ö'): how many, and the first in *at. */
static int mnemonics(const char *s, size_t n, size_t *at) {
    int count = 0;
    for (size_t i = 0; i + 1 < n; i++) {
        unsigned char next = (unsigned char)s[i + 1];
        if (s[i] == '_' && (is_ascii_alnum(next) || next >= 0xc0)) {
            if (!count) *at = i;
            count++;
        }
    }
    return count;
}

static int contains(const char *hay, size_t n, const char *needle, size_t m) {
    for (size_t i = 0; i + m <= n; i++)
        if (memcmp(hay + i, needle, m) == 0) return 1;
    return 0;
}

static void strip_mnemonics(char *src, size_t *src_len, char *tgt, size_t *tgt_len) {
    size_t s_at = 0, t_at = 0;
    if (mnemonics(src, *src_len, &s_at) != 1 || mnemonics(tgt, *tgt_len, &t_at) != 1) return;
    size_t w0 = s_at, w1 = s_at + 1;
    while (w0 > 0 && is_word_byte((unsigned char)src[w0 - 1])) w0--;
    while (w1 < *src_len && is_word_byte((unsigned char)src[w1])) w1++;
    if (contains(tgt, *tgt_len, src + w0, w1 - w0)) return; /* an identifier, not a mnemonic */
    memmove(src + s_at, src + s_at + 1, *src_len - s_at); /* the NUL moves too */
    (*src_len)--;
    memmove(tgt + t_at, tgt + t_at + 1, *tgt_len - t_at);
    (*tgt_len)--;
}

int mo_entry_pair(const mo_entry *e, mo_encoding enc, char **src, size_t *src_len, char **tgt, size_t *tgt_len) {
    *src = *tgt = NULL;
    *src_len = *tgt_len = 0;
    if (e->header) return MO_PAIR_HEADER;
    if (e->plural) return MO_PAIR_PLURAL;
    if (e->str_len == 0) return MO_PAIR_UNTRANSLATED;
    size_t sn, tn;
    char *s = copy_text(e->id, e->id_len, enc == MO_LATIN1, &sn);
    char *t = copy_text(e->str, e->str_len, enc == MO_LATIN1, &tn);
    if (!s || !t) {
        free(s);
        free(t);
        return -1;
    }
    trim_newlines(s, &sn);
    trim_newlines(t, &tn);
    int verdict = MO_PAIR_KEPT;
    if (!sn || !tn) verdict = MO_PAIR_UNTRANSLATED;
    else if (memchr(s, '\n', sn) || memchr(t, '\n', tn)) verdict = MO_PAIR_MULTILINE;
    else if (has_control(s, sn) || has_control(t, tn)) verdict = MO_PAIR_CONTROL;
    else if (!utf8_valid(s, sn) || !utf8_valid(t, tn)) verdict = MO_PAIR_NOT_UTF8;
    if (verdict == MO_PAIR_KEPT) {
        strip_mnemonics(s, &sn, t, &tn);
        /* the words of the text as kept: removing a mnemonic's '_' can make a placeholder
         * of what was none ("%._a3" becomes "%.a3", "%.a" then being printf's) (found by
         * fuzz_mo in its one-hour run) */
        if (!mo_text_has_word(s, sn)) verdict = MO_PAIR_NO_WORDS;
    }
    if (verdict != MO_PAIR_KEPT) {
        free(s);
        free(t);
        return verdict;
    }
    *src = s, *src_len = sn, *tgt = t, *tgt_len = tn;
    return MO_PAIR_KEPT;
}
