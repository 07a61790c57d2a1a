/* The Unicode classes GPT-2's pre-tokenizer asks about (the code points come from
 * formats/utf8.h's decoder). */
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

#endif
