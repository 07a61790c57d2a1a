/* A model's tokenizers travel inside its checkpoint: the file format of text/tokenizer.h as
 * a metadata value ("kiln.tokenizer", or "kiln.src_tokenizer" and "kiln.tgt_tokenizer" for
 * an encoder-decoder with two vocabularies), so eval and decode need nothing beside it. */
#ifndef KILN_HOST_MODEL_CHECKPOINT_TOKENIZER_H
#define KILN_HOST_MODEL_CHECKPOINT_TOKENIZER_H

#include <stddef.h>

#include "text/tokenizer.h"

#define CKPT_TOKENIZER_KEY "kiln.tokenizer"
#define CKPT_SRC_TOKENIZER_KEY "kiln.src_tokenizer"
#define CKPT_TGT_TOKENIZER_KEY "kiln.tgt_tokenizer"

/* The tokenizer stored under `key` in a checkpoint: 1 and *out when present, 0 when the
 * checkpoint has none, -1 with a one-line message (unreadable file, corrupt tokenizer). */
int checkpoint_tokenizer_load(const char *ckpt, const char *key, tokenizer **out, char *err, size_t errlen);

/* An encoder-decoder checkpoint's two tokenizers: the shared one twice (*src == *tgt), or
 * the source's and the target's. Returns 0, or -1 with a message (none stored, corrupt). */
int checkpoint_tokenizer_pair(const char *ckpt, tokenizer **src, tokenizer **tgt, char *err, size_t errlen);

#endif
