/* The tokenizer object, shared by the files of text/ (not for other rooms), and the builder
 * that the file reader, the GPT-2 importer and the BPE learner (bpe_train.c) all go
 * through, so every tokenizer satisfies the same checks. */
#ifndef KILN_HOST_TEXT_TOKENIZER_INTERNAL_H
#define KILN_HOST_TEXT_TOKENIZER_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "text/tokenizer.h"

typedef enum tokenizer_pretok { PRETOK_NONE = 0, PRETOK_GPT2 = 1 } tokenizer_pretok;

/* How an id is defined. */
enum { TOKDEF_NONE = 0, TOKDEF_BYTE, TOKDEF_MERGE, TOKDEF_SPECIAL };

typedef struct tokenizer_merge {
    int32_t left, right, result;
} tokenizer_merge;

typedef struct tokenizer_special_entry {
    int32_t id;
    unsigned roles; /* bit k: tokenizer_special_kind k */
} tokenizer_special_entry;

struct tokenizer {
    int32_t n_vocab;
    tokenizer_pretok pretok;
    int32_t byte_id[256];
    uint8_t *kind; /* [n_vocab] TOKDEF_* */
    /* each token's bytes: blob[offset[id] .. offset[id] + length[id]) */
    uint8_t *blob;
    size_t blob_len, blob_cap;
    size_t *offset;
    uint32_t *length;
    /* merges in rank order, and (left, right) -> rank by open addressing */
    tokenizer_merge *merges;
    int32_t n_merges, merges_cap;
    uint64_t *pair_keys; /* (left << 32 | right) + 1; 0: empty slot */
    int32_t *pair_rank;
    size_t pair_cap;     /* a power of two, at least twice the merges */
    tokenizer_special_entry *specials;
    int32_t n_specials;
    int32_t role_id[TOK_SPECIAL_COUNT];
};

/* Role names as the file spells them: "pad", "bos", ... */
extern const char *const tokenizer_role_names[TOK_SPECIAL_COUNT];

/* A tokenizer of n_vocab ids, none defined yet. NULL when out of memory. */
tokenizer *tok_new(int32_t n_vocab, tokenizer_pretok pretok);
/* Each returns 0, or -1 with a message (no file or line: the caller adds them). */
int tok_set_bytes(tokenizer *t, const int32_t byte_id[256], char *err, size_t errlen);
int tok_add_special(tokenizer *t, int32_t id, const char *name, size_t name_len, unsigned roles, char *err,
                    size_t errlen);
/* Merges come in rank order; left and right must be defined already. */
int tok_add_merge(tokenizer *t, int32_t left, int32_t right, int32_t result, char *err, size_t errlen);
/* Every id defined? */
int tok_finish(tokenizer *t, char *err, size_t errlen);
/* The rank of the merge of (left, right), or -1. */
int32_t tok_pair_rank(const tokenizer *t, int32_t left, int32_t right);
/* 1 when a special name is acceptable: 1..64 printable ASCII bytes, no space. */
int tok_special_name_ok(const char *name, size_t len);

#endif
