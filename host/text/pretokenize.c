/* GPT-2's pattern as a hand-written matcher. The alternatives are tried in the pattern's
 * order at each position, as the regex engine does:
 *   1. the contractions 's 't 're 've 'm 'll 'd (lower-case ASCII only)
 *   2-4. an optional single space (U+0020) and a run of letters, of digits, or of characters
 *        that are none of letter, digit, space (invalid bytes included)
 *   5. \s+(?!\S): a whitespace run that the next character does not end, so a run followed
 *        by text gives all but its last character (which then leads the next piece)
 *   6. \s+: a single whitespace character before text. */
#include "formats/utf8.h"
#include "text/pretokenize.h"

#include "text/unicode_class.h"

/* ASCII classes, so the common case skips the table search. */
static uclass ascii_class(uint8_t c) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return UCLASS_LETTER;
    if (c >= '0' && c <= '9') return UCLASS_NUMBER;
    if (c == ' ' || (c >= 0x09 && c <= 0x0D)) return UCLASS_SPACE;
    return UCLASS_OTHER;
}

/* The class of the character at s[p] and its length in bytes. */
static uclass class_at(const uint8_t *s, size_t n, size_t p, size_t *len) {
    if (s[p] < 0x80) {
        *len = 1;
        return ascii_class(s[p]);
    }
    uint32_t cp;
    int l = utf8_decode(s + p, n - p, &cp);
    if (l == 0) { /* an invalid byte: a lone surrogate to Python, of no class */
        *len = 1;
        return UCLASS_OTHER;
    }
    *len = (size_t)l;
    return unicode_class(cp);
}

/* The end of the run of characters of class cls that starts at p. */
static size_t run_end(const uint8_t *s, size_t n, size_t p, uclass cls) {
    size_t len;
    while (p < n && class_at(s, n, p, &len) == cls) p += len;
    return p;
}

size_t pretokenize_next(const uint8_t *s, size_t n, size_t pos) {
    if (s[pos] == '\'' && pos + 1 < n) {
        uint8_t c = s[pos + 1];
        if (c == 's' || c == 't' || c == 'm' || c == 'd') return pos + 2;
        if (pos + 2 < n && ((c == 'r' && s[pos + 2] == 'e') || (c == 'v' && s[pos + 2] == 'e') ||
                            (c == 'l' && s[pos + 2] == 'l')))
            return pos + 3;
    }
    size_t len;
    uclass first = class_at(s, n, pos, &len);
    if (s[pos] == ' ' && pos + 1 < n) {
        size_t next_len;
        uclass next = class_at(s, n, pos + 1, &next_len);
        if (next != UCLASS_SPACE) return run_end(s, n, pos + 1, next); /* " word", " 42", " ?!" */
    }
    if (first != UCLASS_SPACE) return run_end(s, n, pos, first);
    /* a whitespace run: all of it at the end of the text or when it is one character,
     * otherwise all but its last character */
    size_t last = pos, p = pos;
    while (p < n && class_at(s, n, p, &len) == UCLASS_SPACE) last = p, p += len;
    if (p == n || last == pos) return p;
    return last;
}
