/* Unicode normalization form C (canonical decomposition, then canonical composition), as
 * the NFC normalizer of Qwen's tokenizer.json asks. The data is generated from Python's
 * unicodedata by scripts/gen_nfc_tables.py (text/unicode_nfc_table.inc); Hangul syllables
 * are composed and decomposed by arithmetic. Bytes that are not valid UTF-8 pass through
 * unchanged and block composition across them. */
#ifndef KILN_HOST_TEXT_UNICODE_NFC_H
#define KILN_HOST_TEXT_UNICODE_NFC_H

#include <stddef.h>
#include <stdint.h>

#include "text/tokenizer_internal.h"

/* Appends the NFC form of s[0..n) to out; 0, or -1 when out of memory. */
int unicode_nfc(const uint8_t *s, size_t n, tok_buf *out);

#endif
