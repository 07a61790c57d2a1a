/* UTF-8 decoding: see utf8.h. */
#include "formats/utf8.h"

int utf8_decode(const uint8_t *s, size_t n, uint32_t *cp) {
    uint8_t b = s[0];
    if (b < 0x80) {
        *cp = b;
        return 1;
    }
    int len;
    uint32_t c, min_second = 0x80, max_second = 0xBF; /* the second byte's range (Unicode table 3-7) */
    if (b >= 0xC2 && b <= 0xDF) {
        len = 2, c = b & 0x1F;
    } else if (b >= 0xE0 && b <= 0xEF) {
        len = 3, c = b & 0x0F;
        if (b == 0xE0) min_second = 0xA0; /* overlong */
        if (b == 0xED) max_second = 0x9F; /* surrogates */
    } else if (b >= 0xF0 && b <= 0xF4) {
        len = 4, c = b & 0x07;
        if (b == 0xF0) min_second = 0x90; /* overlong */
        if (b == 0xF4) max_second = 0x8F; /* above U+10FFFF */
    } else {
        return 0; /* a continuation byte, C0, C1, F5..FF */
    }
    if ((size_t)len > n || s[1] < min_second || s[1] > max_second) return 0;
    c = (c << 6) | (s[1] & 0x3F);
    for (int i = 2; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80) return 0;
        c = (c << 6) | (s[i] & 0x3F);
    }
    *cp = c;
    return len;
}

int utf8_valid(const char *s, size_t n) {
    uint32_t cp;
    for (size_t i = 0, len; i < n; i += len)
        if ((len = (size_t)utf8_decode((const uint8_t *)s + i, n - i, &cp)) == 0) return 0;
    return 1;
}
