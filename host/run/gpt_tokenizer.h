/* Which tokenizer a GPT command uses, and text through it (train, eval and decode of a GPT):
 * --tokenizer FILE when given, else the one inside the checkpoint's metadata
 * ("kiln.tokenizer", written by kiln train --tokenizer), else bytes for a 256-token model. */
#ifndef KILN_HOST_RUN_GPT_TOKENIZER_H
#define KILN_HOST_RUN_GPT_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#include "formats/data.h"
#include "text/tokenizer.h"

/* The tokenizer for a model of `vocab` tokens: path (may be NULL), else ckpt's (may be
 * NULL), else bytes when vocab is 256. Its vocabulary must be the model's. vocab < 0: not
 * known yet (a fresh model takes the tokenizer's), nothing checked, bytes by default. Returns 0 and
 * *out, or 1 with one line printed ("... give its tokenizer with --tokenizer FILE"). */
int gpt_tokenizer_choose(const char *path, const char *ckpt, int32_t vocab, tokenizer **out);

/* A text file as training or evaluation data (role: "the training data", "the evaluation
 * data", for the messages): its tokens under t (bytes: data_load_bytes_as's own path, so
 * nothing changes for byte-level runs). Returns 0, or 1 with one line printed. */
int gpt_tokenizer_load_data(const tokenizer *t, const char *path, const char *role, data_set **out);

/* 1 when t is the plain byte-level tokenizer (256 ids, no specials, no merges): a
 * checkpoint then needs no tokenizer in its metadata. */
int gpt_tokenizer_is_bytes(const tokenizer *t);

/* The text a GPT checkpoint stores under CKPT_TOKENIZER_KEY (model/checkpoint_tokenizer.h),
 * or NULL for bytes: a byte-level model's file stays GPT-2's layout alone (NULL too when out
 * of memory, which the caller cannot tell apart, and then writes no tokenizer). Free it. */
char *gpt_tokenizer_checkpoint_text(const tokenizer *t);

#endif
