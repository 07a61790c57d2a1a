/* UTF-8 decoding by Unicode's well-formedness rules (its table 3-7, as Python's strict
 * decoder): no overlong forms, no surrogates, nothing above U+10FFFF. host/'s one decoder:
 * JSON strings, .mo catalog texts, GPT-2's pre-tokenizer and GGUF vocabularies use it. */
#ifndef KILN_HOST_FORMATS_UTF8_H
#define KILN_HOST_FORMATS_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* Decodes one well-formed UTF-8 sequence at s[0..n) (n >= 1): returns its length (1-4) and
 * the code point in *cp, or 0 when s[0] does not start a well-formed, complete sequence
 * (then s[0] alone is an invalid byte, as Python's decoder with 'surrogateescape' sees it). */
int utf8_decode(const uint8_t *s, size_t n, uint32_t *cp);

/* 1 when s[0..n) is well-formed UTF-8 throughout, else 0. */
int utf8_valid(const char *s, size_t n);

#endif
