/* GPT-2's byte-to-unicode spelling (bytes_to_unicode() in OpenAI's encoder.py): how GPT-2's
 * vocab.json, merges.txt and GGUF's tokenizer.ggml.tokens write a token's bytes as text. The
 * printable bytes ! .. ~, ¡ .. ¬ and ® .. ÿ stand for themselves; every other byte stands for
 * code point 256 + its rank among those others. Every code point of the map is below U+0800,
 * so a byte spells as one or two UTF-8 bytes. */
#ifndef KILN_HOST_TEXT_GPT2_BYTES_H
#define KILN_HOST_TEXT_GPT2_BYTES_H

#include <stdint.h>

/* Byte b's spelling as UTF-8 into out (room for 2); returns its length. */
int gpt2_byte_spell(unsigned b, char *out);

/* The byte code point cp spells, or -1 when it spells none. */
int gpt2_byte_of(uint32_t cp);

#endif
