/* GPT-2's byte-to-unicode spelling (gpt2_bytes.h). */
#include "text/gpt2_bytes.h"

static int printable(unsigned b) { return (b >= '!' && b <= '~') || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff); }

/* The code point byte b spells. */
static uint32_t code_point(unsigned b) {
    if (printable(b)) return b;
    uint32_t rank = 0;
    for (unsigned c = 0; c < b; c++) rank += !printable(c);
    return 256 + rank;
}

int gpt2_byte_spell(unsigned b, char *out) {
    uint32_t cp = code_point(b & 0xffu);
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    out[0] = (char)(0xc0 | cp >> 6);
    out[1] = (char)(0x80 | (cp & 0x3f));
    return 2;
}

int gpt2_byte_of(uint32_t cp) {
    if (cp < 256) return printable(cp) ? (int)cp : -1;
    uint32_t rank = cp - 256;
    for (unsigned c = 0; c < 256; c++)
        if (!printable(c) && rank-- == 0) return (int)c;
    return -1;
}
