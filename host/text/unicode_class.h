/* The Unicode classes GPT-2's pre-tokenizer asks about, and UTF-8 decoding with Python's
 * strict rules (no overlongs, no surrogates, nothing above U+10FFFF). */
#ifndef KILN_HOST_TEXT_UNICODE_CLASS_H
#define KILN_HOST_TEXT_UNICODE_CLASS_H

#include <stddef.h>
#include <stdint.h>

typedef enum uclass {
    UCLASS_OTHER = 0, /* none of the below; also every byte that is not valid UTF-8 */
    UCLASS_LETTER,    /* \p{L} */
    UCLASS_NUMBER,    /* \p{N} */
    UCLASS_SPACE      /* \s: the White_Space property */
} uclass;

/* The class of a code point (U+0000..U+10FFFF), from the table that
 * scripts/gen_unicode_tables.py generates. */
uclass unicode_class(uint32_t cp);

/* Decodes one well-formed UTF-8 sequence at s[0..n) (n >= 1): returns its length (1-4) and
 * the code point in *cp, or 0 when s[0] does not start a well-formed, complete sequence
 * (then s[0] alone is an invalid byte, as Python's decoder with 'surrogateescape' sees it). */
int utf8_decode(const uint8_t *s, size_t n, uint32_t *cp);

#endif
