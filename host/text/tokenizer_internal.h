/* The tokenizer object, shared by the files of text/ (not for other rooms), and the builder
 * that the file reader, the GPT-2 importer and the BPE learner (bpe_train.c) all go
 * through, so every tokenizer satisfies the same checks. */
#ifndef KILN_HOST_TEXT_TOKENIZER_INTERNAL_H
#define KILN_HOST_TEXT_TOKENIZER_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "formats/gguf.h"
#include "text/tokenizer.h"

/* PRETOK_STEPS: a version 2 tokenizer's own normalizers and pre-tokenizers (tok_step). */
typedef enum tokenizer_pretok { PRETOK_NONE = 0, PRETOK_GPT2 = 1, PRETOK_STEPS = 2 } tokenizer_pretok;

/* How an id is defined. TOKDEF_TOKEN: a vocabulary entry given by its bytes (version 2). */
enum { TOKDEF_NONE = 0, TOKDEF_BYTE, TOKDEF_MERGE, TOKDEF_SPECIAL, TOKDEF_TOKEN };

/* Roles beyond tokenizer_special_kind, in a special's role bits: the unknown token, and an
 * end of generation other than EOS (end of turn, end of message), which several may play. */
enum { TOKROLE_UNK = TOK_SPECIAL_COUNT, TOKROLE_EOG, TOKROLE_COUNT };

/* A step of a version 2 tokenizer's pipeline (text/tok_steps.c; the file spells each one
 * as a record, docs/tokenizers.md). */
typedef enum tok_step_kind {
    STEP_NFC,            /* normalizer: Unicode NFC */
    STEP_PREPEND,        /* normalizer: a prefix `a` on non-empty text */
    STEP_REPLACE,        /* normalizer or decoder: every match of `re` (source `a`) becomes `b` */
    STEP_SPLIT,          /* pre-tokenizer: split by `re` with `behaviour` (and `invert`) */
    STEP_BYTELEVEL,      /* pre-tokenizer: `prefix_space`, and GPT-2's pattern when `use_regex`;
                            decoder: the bytes of the tokens as they are */
    STEP_DIGITS,         /* pre-tokenizer: each digit alone (`individual`) or runs of digits */
    STEP_METASPACE,      /* pre-tokenizer: spaces become `a`, prefix by `prepend`, split before `a` */
    STEP_BYTEFALLBACK,   /* decoder: <0xNN> tokens are their bytes */
    STEP_FUSE,           /* decoder: the tokens are joined (what follows sees one string) */
    STEP_STRIP           /* decoder: up to `start` leading and `stop` trailing `a`s removed */
} tok_step_kind;

typedef enum tok_split_behaviour {
    SPLIT_ISOLATED, SPLIT_REMOVED, SPLIT_MERGED_PREVIOUS, SPLIT_MERGED_NEXT, SPLIT_CONTIGUOUS
} tok_split_behaviour;

typedef enum tok_prepend_scheme { PREPEND_ALWAYS, PREPEND_FIRST, PREPEND_NEVER } tok_prepend_scheme;

struct regex;
typedef struct tok_step {
    tok_step_kind kind;
    char *a, *b;                /* malloc'd strings (b: Replace's content) */
    size_t a_len, b_len;
    struct regex *re;           /* Replace's and Split's pattern, compiled */
    int regex_source;           /* 1: `a` is a regex; 0: a literal string */
    tok_split_behaviour behaviour;
    int invert, prefix_space, use_regex, individual, split;
    tok_prepend_scheme prepend;
    int start, stop;
} tok_step;

enum { TOK_STAGE_NORMALIZER, TOK_STAGE_PRETOKENIZER, TOK_STAGE_DECODER, TOK_STAGES };

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
    int32_t role_id[TOKROLE_COUNT];
    /* version 2 (0 or 1: the first format) */
    int version;
    int byte_level;    /* tokens are raw bytes (ByteLevel); else text whose bytes fall back */
    int byte_fallback; /* characters without a token become their bytes' tokens */
    int ignore_merges; /* a piece that is a token is that token, merges or not */
    int add_bos, add_eos;
    tok_step *steps[TOK_STAGES];
    int n_steps[TOK_STAGES];
    /* bytes -> id of the TOKEN, MERGE (and for byte_level, BYTE) ids, built by tok_finish */
    int32_t *lookup;
    size_t lookup_cap;
};

/* Role names as the file spells them: "pad", "bos", ..., "unk", "eog". */
extern const char *const tokenizer_role_names[TOKROLE_COUNT];

/* A tokenizer of n_vocab ids, none defined yet. NULL when out of memory. */
tokenizer *tok_new(int32_t n_vocab, tokenizer_pretok pretok);
/* Each returns 0, or -1 with a message (no file or line: the caller adds them). */
int tok_set_bytes(tokenizer *t, const int32_t byte_id[256], char *err, size_t errlen);
int tok_add_special(tokenizer *t, int32_t id, const char *name, size_t name_len, unsigned roles, char *err,
                    size_t errlen);
/* Merges come in rank order; left and right must be defined already. */
int tok_add_merge(tokenizer *t, int32_t left, int32_t right, int32_t result, char *err, size_t errlen);
/* Version 2: an id defined by its bytes. */
int tok_add_token(tokenizer *t, int32_t id, const uint8_t *bytes, size_t len, char *err, size_t errlen);
/* Every id defined? (Version 2: builds the lookup too.) */
int tok_finish(tokenizer *t, char *err, size_t errlen);
int tok_build_lookup(tokenizer *t, char *err, size_t errlen);
/* The id of the token whose bytes are s[0..len) (version 2), or -1. */
int32_t tok_lookup(const tokenizer *t, const uint8_t *s, size_t len);
/* Appends a step to a stage, its pattern compiled; the step's strings and regex now belong
 * to t (on failure the step is cleared). */
int tok_add_step(tokenizer *t, int stage, tok_step *step, char *err, size_t errlen);
void tok_step_clear(tok_step *step);
/* Compiles step->re from `a` (a literal or a regex, per regex_source). */
int tok_step_compile(tok_step *step, char *err, size_t errlen);
/* The rank of the merge of (left, right), or -1. */
int32_t tok_pair_rank(const tokenizer *t, int32_t left, int32_t right);
/* 1 when a special name is acceptable: 1..64 printable ASCII bytes, no space. */
int tok_special_name_ok(const char *name, size_t len);

/* A growing byte buffer, NUL-terminated after its len bytes; `failed` sticks after the
 * first allocation failure. */
typedef struct tok_buf {
    uint8_t *p;
    size_t len, cap;
    int failed;
} tok_buf;
/* Appends s[0..n) (s NULL: n bytes the caller then fills; n 0: p is allocated); 0, or -1 when any
 * append so far failed. */
int tok_buf_put(tok_buf *b, const void *s, size_t n);

/* Version 2 encoding (tok_steps.c): the text through the normalizers, then the
 * pre-tokenizers; the pieces are pieces->p[off[i] .. off[i] + len[i]). */
typedef struct tok_pieces {
    tok_buf text;
    size_t *off, *len;
    size_t n, cap;
    int failed;
} tok_pieces;
int tok_pretokenize(const tokenizer *t, const uint8_t *text, size_t n, tok_pieces *out);
void tok_pieces_free(tok_pieces *p);
/* Version 2 file records (tok_file_steps.c). Strings are escaped: %XX for each byte that is
 * a space or control, '%', DEL or above 0x7F; a lone "%" is the empty string. */
int tok_escape(tok_buf *out, const void *s, size_t n);
int tok_unescape(const char *f, size_t n, tok_buf *out); /* -1 unless the one spelling */
int tok_parse_option(tokenizer *t, const char *f, size_t n);
int tok_is_step_record(const char *f, size_t n);
/* A "normalize", "pretokenize" or "decode" record: its first word, then its nf fields. */
int tok_parse_step(tokenizer *t, const char *stage_word, size_t stage_len, const char **f, const size_t *fl, int nf,
                   char *err, size_t errlen);
/* The option and step records, in file order. */
int tok_serialize_steps(const tokenizer *t, tok_buf *out);
/* A vocabulary string's bytes into buf (room for len): GPT-2's byte-to-unicode spelling
 * undone where the tokens are bytes (byte_level), else the string itself. -1 when a
 * character spells no byte. */
long tok_unspell(const tokenizer *t, const char *s, size_t len, uint8_t *buf);
/* The added tokens llama.cpp takes for an end of generation by their text (<|eot_id|>,
 * <|im_end|>, ...). */
int tok_is_eog_name(const char *s, size_t len);
/* GGUF (gguf_tokenizer_*.c): a gpt2 vocabulary with GPT-2's pre-tokenizer as version 1 (-1
 * when it does not fit), and llama.cpp's pre-tokenizer names: the k-th name with its
 * patterns (NULL past the last). */
int tok_from_gguf_v1(const gguf_kv *tokens, const gguf_kv *types, const gguf_kv *merges, tokenizer **out);
const char *tok_gguf_pre_name(int k, const char *const **patterns);
/* Appends what token id decodes to (first: it starts the text). */
void tok_decode_append(const tokenizer *t, int32_t id, int first, tok_buf *out);

#endif
