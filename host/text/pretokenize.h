/* GPT-2's pre-tokenizer, hand-written over UTF-8 (no regex library): the pieces that
 *     's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 * finds, in order, as Python's `regex` module does. A byte that is not part of valid UTF-8
 * counts as one character of none of the classes (Python's 'surrogateescape'). */
#ifndef KILN_HOST_TEXT_PRETOKENIZE_H
#define KILN_HOST_TEXT_PRETOKENIZE_H

#include <stddef.h>
#include <stdint.h>

/* The end of the piece that starts at s[pos] (pos < n): the next piece starts there. */
size_t pretokenize_next(const uint8_t *s, size_t n, size_t pos);

#endif
