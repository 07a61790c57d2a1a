/* The tokenizer object: its vocabulary, merges and specials, the builder every reader goes
 * through, byte-level tokenizers, and decoding. */
#include <stdlib.h>
#include <string.h>

#include "formats/error_printf.h"
#include "formats/utf8.h"
#include "text/gpt2_bytes.h"
#include "text/tokenizer_internal.h"

const char *const tokenizer_role_names[TOKROLE_COUNT] = {"pad", "bos", "eos", "cls", "sep", "mask", "unk", "eog"};
static const char *const default_special_names[TOK_SPECIAL_COUNT] = {"[PAD]", "[BOS]", "[EOS]",
                                                                     "[CLS]", "[SEP]", "[MASK]"};

tokenizer *tok_new(int32_t n_vocab, tokenizer_pretok pretok) {
    if (n_vocab < 1 || n_vocab > TOKENIZER_MAX_VOCAB) return NULL;
    tokenizer *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    t->n_vocab = n_vocab;
    t->pretok = pretok;
    t->kind = calloc((size_t)n_vocab, 1);
    t->offset = calloc((size_t)n_vocab, sizeof *t->offset);
    t->length = calloc((size_t)n_vocab, sizeof *t->length);
    t->pair_cap = 1024; /* grown by tok_add_merge to keep the load under 1/2 */
    t->pair_keys = calloc(t->pair_cap, sizeof *t->pair_keys);
    t->pair_rank = malloc(t->pair_cap * sizeof *t->pair_rank);
    for (int k = 0; k < TOKROLE_COUNT; k++) t->role_id[k] = -1;
    for (int b = 0; b < 256; b++) t->byte_id[b] = -1;
    if (!t->kind || !t->offset || !t->length || !t->pair_keys || !t->pair_rank) {
        tokenizer_free(t);
        return NULL;
    }
    return t;
}

void tokenizer_free(tokenizer *t) {
    if (!t) return;
    free(t->kind);
    free(t->blob);
    free(t->offset);
    free(t->length);
    free(t->merges);
    free(t->pair_keys);
    free(t->pair_rank);
    free(t->specials);
    for (int stage = 0; stage < TOK_STAGES; stage++) {
        for (int i = 0; i < t->n_steps[stage]; i++) tok_step_clear(&t->steps[stage][i]);
        free(t->steps[stage]);
    }
    free(t->lookup);
    free(t);
}

/* Grows the blob ahead of time so that define() does not move it while a and b point in. */
static int reserve_blob(tokenizer *t, size_t extra) {
    if (t->blob_len + extra <= t->blob_cap) return 0;
    size_t cap = t->blob_cap ? t->blob_cap : 4096;
    while (cap < t->blob_len + extra) cap *= 2;
    uint8_t *grown = realloc(t->blob, cap);
    if (!grown) return -1;
    t->blob = grown, t->blob_cap = cap;
    return 0;
}

/* Defines id as the bytes a then b (appended to the blob). */
static int define(tokenizer *t, int32_t id, int kind, const uint8_t *a, size_t na, const uint8_t *b, size_t nb,
                  char *err, size_t errlen) {
    if (id < 0 || id >= t->n_vocab) {
        error_printf(err, errlen, "id %ld is outside the vocabulary (0..%ld)", (long)id, (long)t->n_vocab - 1);
        return -1;
    }
    if (t->kind[id] != TOKDEF_NONE) {
        error_printf(err, errlen, "id %ld is defined twice", (long)id);
        return -1;
    }
    if (na + nb > UINT32_MAX) {
        error_printf(err, errlen, "token %ld is too long", (long)id);
        return -1;
    }
    /* a and b may point into the blob: callers that pass such pointers reserve first, so
     * this does not move it under them */
    if (reserve_blob(t, na + nb)) {
        error_printf(err, errlen, "out of memory");
        return -1;
    }
    memcpy(t->blob + t->blob_len, a, na);
    if (nb) memcpy(t->blob + t->blob_len + na, b, nb);
    t->offset[id] = t->blob_len;
    t->length[id] = (uint32_t)(na + nb);
    t->blob_len += na + nb;
    t->kind[id] = (uint8_t)kind;
    return 0;
}

int tok_set_bytes(tokenizer *t, const int32_t byte_id[256], char *err, size_t errlen) {
    for (int b = 0; b < 256; b++) {
        uint8_t byte = (uint8_t)b;
        if (define(t, byte_id[b], TOKDEF_BYTE, &byte, 1, NULL, 0, err, errlen)) return -1;
        t->byte_id[b] = byte_id[b];
    }
    return 0;
}

int tok_special_name_ok(const char *name, size_t len) {
    if (len < 1 || len > 64) return 0;
    for (size_t i = 0; i < len; i++)
        if (name[i] <= ' ' || name[i] > '~') return 0;
    return 1;
}

int tok_add_special(tokenizer *t, int32_t id, const char *name, size_t name_len, unsigned roles, char *err,
                    size_t errlen) {
    if (t->version < 2 && !tok_special_name_ok(name, name_len)) {
        error_printf(err, errlen, "a special token's name must be 1 to 64 printable ASCII characters without spaces");
        return -1;
    }
    if (t->version >= 2 && (name_len < 1 || name_len > 1024)) {
        error_printf(err, errlen, "a special token's text must be 1 to 1024 bytes");
        return -1;
    }
    if (roles >> TOKROLE_COUNT || (t->version < 2 && roles >> TOK_SPECIAL_COUNT)) {
        error_printf(err, errlen, "unknown roles");
        return -1;
    }
    for (int k = 0; k < TOKROLE_EOG; k++) /* several may end generation */
        if ((roles >> k & 1) && t->role_id[k] >= 0) {
            error_printf(err, errlen, "two special tokens are %s", tokenizer_role_names[k]);
            return -1;
        }
    if (reserve_blob(t, name_len)) {
        error_printf(err, errlen, "out of memory");
        return -1;
    }
    tokenizer_special_entry *grown = realloc(t->specials, (size_t)(t->n_specials + 1) * sizeof *grown);
    if (!grown) {
        error_printf(err, errlen, "out of memory");
        return -1;
    }
    t->specials = grown;
    if (define(t, id, TOKDEF_SPECIAL, (const uint8_t *)name, name_len, NULL, 0, err, errlen)) return -1;
    t->specials[t->n_specials++] = (tokenizer_special_entry){.id = id, .roles = roles};
    for (int k = 0; k < TOKROLE_COUNT; k++)
        if (roles >> k & 1) t->role_id[k] = id;
    return 0;
}

int tok_add_token(tokenizer *t, int32_t id, const uint8_t *bytes, size_t len, char *err, size_t errlen) {
    if (len == 0) {
        error_printf(err, errlen, "token %ld is empty", (long)id);
        return -1;
    }
    return define(t, id, TOKDEF_TOKEN, bytes, len, NULL, 0, err, errlen);
}

static size_t pair_slot(const tokenizer *t, uint64_t key) {
    return (size_t)((key * UINT64_C(0x9E3779B97F4A7C15)) >> 20) & (t->pair_cap - 1);
}

/* Doubles the pair table, re-inserting every merge. */
static int grow_pairs(tokenizer *t) {
    size_t cap = 2 * t->pair_cap;
    uint64_t *keys = calloc(cap, sizeof *keys);
    int32_t *ranks = malloc(cap * sizeof *ranks);
    if (!keys || !ranks) {
        free(keys);
        free(ranks);
        return -1;
    }
    free(t->pair_keys);
    free(t->pair_rank);
    t->pair_keys = keys, t->pair_rank = ranks, t->pair_cap = cap;
    for (int32_t r = 0; r < t->n_merges; r++) {
        uint64_t key = ((uint64_t)(uint32_t)t->merges[r].left << 32 | (uint32_t)t->merges[r].right) + 1;
        size_t s = pair_slot(t, key);
        while (t->pair_keys[s]) s = (s + 1) & (t->pair_cap - 1);
        t->pair_keys[s] = key;
        t->pair_rank[s] = r;
    }
    return 0;
}

int32_t tok_pair_rank(const tokenizer *t, int32_t left, int32_t right) {
    uint64_t key = ((uint64_t)(uint32_t)left << 32 | (uint32_t)right) + 1;
    for (size_t s = pair_slot(t, key);; s = (s + 1) & (t->pair_cap - 1)) {
        if (t->pair_keys[s] == key) return t->pair_rank[s];
        if (t->pair_keys[s] == 0) return -1;
    }
}

/* Version 2: a merge joins two defined tokens into a third one already defined as their
 * bytes (a vocabulary may make one token by several merges). */
static int check_merge_v2(const tokenizer *t, int32_t left, int32_t right, int32_t result, char *err, size_t errlen) {
    const int32_t ids[3] = {left, right, result};
    for (int k = 0; k < 3; k++)
        if (ids[k] < 0 || ids[k] >= t->n_vocab || t->kind[ids[k]] == TOKDEF_NONE || t->kind[ids[k]] == TOKDEF_SPECIAL) {
            error_printf(err, errlen, "merge %ld %ld %ld: %ld is not a defined ordinary token", (long)left, (long)right,
                         (long)result, (long)ids[k]);
            return -1;
        }
    size_t nl = t->length[left], nr = t->length[right];
    if (t->length[result] != nl + nr || memcmp(t->blob + t->offset[result], t->blob + t->offset[left], nl) ||
        memcmp(t->blob + t->offset[result] + nl, t->blob + t->offset[right], nr)) {
        error_printf(err, errlen, "merge %ld %ld %ld: the result's bytes are not the two tokens' bytes", (long)left,
                     (long)right, (long)result);
        return -1;
    }
    return 0;
}

int tok_add_merge(tokenizer *t, int32_t left, int32_t right, int32_t result, char *err, size_t errlen) {
    if (t->version >= 2 && check_merge_v2(t, left, right, result, err, errlen)) return -1;
    for (int side = 0; side < 2 && t->version < 2; side++) {
        int32_t id = side ? right : left;
        if (id < 0 || id >= t->n_vocab || (t->kind[id] != TOKDEF_BYTE && t->kind[id] != TOKDEF_MERGE)) {
            error_printf(err, errlen, "merge operand %ld is not a byte nor the result of an earlier merge", (long)id);
            return -1;
        }
    }
    if (tok_pair_rank(t, left, right) >= 0) {
        error_printf(err, errlen, "the pair %ld %ld is merged twice", (long)left, (long)right);
        return -1;
    }
    if (t->n_merges == t->merges_cap) {
        int32_t cap = t->merges_cap ? t->merges_cap * 2 : 256;
        tokenizer_merge *grown = realloc(t->merges, (size_t)cap * sizeof *grown);
        if (!grown) {
            error_printf(err, errlen, "out of memory");
            return -1;
        }
        t->merges = grown, t->merges_cap = cap;
    }
    if (2 * ((size_t)t->n_merges + 1) > t->pair_cap && grow_pairs(t)) {
        error_printf(err, errlen, "out of memory");
        return -1;
    }
    size_t nl = t->length[left], nr = t->length[right];
    if (reserve_blob(t, nl + nr)) {
        error_printf(err, errlen, "out of memory");
        return -1;
    }
    if (t->version < 2 &&
        define(t, result, TOKDEF_MERGE, t->blob + t->offset[left], nl, t->blob + t->offset[right], nr, err, errlen))
        return -1;
    uint64_t key = ((uint64_t)(uint32_t)left << 32 | (uint32_t)right) + 1;
    size_t s = pair_slot(t, key);
    while (t->pair_keys[s]) s = (s + 1) & (t->pair_cap - 1);
    t->pair_keys[s] = key;
    t->pair_rank[s] = t->n_merges;
    t->merges[t->n_merges++] = (tokenizer_merge){.left = left, .right = right, .result = result};
    return 0;
}

int tok_finish(tokenizer *t, char *err, size_t errlen) {
    for (int b = 0; b < 256; b++)
        if (t->byte_id[b] < 0) {
            error_printf(err, errlen, "no token for the byte 0x%02X", (unsigned)b);
            return -1;
        }
    for (int32_t id = 0; id < t->n_vocab; id++)
        if (t->kind[id] == TOKDEF_NONE) {
            error_printf(err, errlen, "id %ld is not defined (a vocabulary of %ld ids defines each of 0..%ld)",
                         (long)id, (long)t->n_vocab, (long)t->n_vocab - 1);
            return -1;
        }
    return t->version >= 2 ? tok_build_lookup(t, err, errlen) : 0;
}

tokenizer *tokenizer_bytes(int with_specials) {
    tokenizer *t = tok_new(with_specials ? 256 + TOK_SPECIAL_COUNT : 256, PRETOK_NONE);
    if (!t) return NULL;
    int32_t ids[256];
    for (int b = 0; b < 256; b++) ids[b] = b;
    int rc = tok_set_bytes(t, ids, NULL, 0);
    for (int k = 0; with_specials && !rc && k < TOK_SPECIAL_COUNT; k++)
        rc = tok_add_special(t, 256 + k, default_special_names[k], strlen(default_special_names[k]), 1u << k, NULL, 0);
    if (rc || tok_finish(t, NULL, 0)) {
        tokenizer_free(t);
        return NULL;
    }
    return t;
}

int32_t tokenizer_vocab_size(const tokenizer *t) { return t->n_vocab; }
int32_t tokenizer_merge_count(const tokenizer *t) { return t->n_merges; }

int tokenizer_merge_at(const tokenizer *t, int32_t rank, int32_t *left, int32_t *right) {
    if (rank < 0 || rank >= t->n_merges) return -1;
    *left = t->merges[rank].left;
    *right = t->merges[rank].right;
    return 0;
}

long tok_unspell(const tokenizer *t, const char *s, size_t len, uint8_t *buf) {
    if (!t->byte_level) {
        memcpy(buf, s, len);
        return (long)len;
    }
    long n = 0;
    for (size_t pos = 0; pos < len;) {
        uint32_t cp;
        int l = utf8_decode((const uint8_t *)s + pos, len - pos, &cp);
        int b = l ? gpt2_byte_of(cp) : -1;
        if (b < 0) return -1;
        buf[n++] = (uint8_t)b;
        pos += (size_t)l;
    }
    return n;
}

int tok_is_eog_name(const char *s, size_t len) {
    /* llama.cpp's list (llama-vocab.cpp), for the families kiln reads */
    static const char *const names[] = {"<|eot_id|>", "<|eom_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>",
                                        "<|endoftext|>", "<|end_of_text|>", "<EOT>"};
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++)
        if (strlen(names[k]) == len && !memcmp(names[k], s, len)) return 1;
    return 0;
}

int tokenizer_add_bos(const tokenizer *t) { return t->add_bos && t->role_id[TOK_BOS] >= 0; }

int tokenizer_eog_ids(const tokenizer *t, int32_t *ids, int max) {
    int n = 0;
    if (t->role_id[TOK_EOS] >= 0 && n < max) ids[n++] = t->role_id[TOK_EOS];
    for (int32_t i = 0; i < t->n_specials; i++)
        if ((t->specials[i].roles >> TOKROLE_EOG & 1) && t->specials[i].id != t->role_id[TOK_EOS] && n < max)
            ids[n++] = t->specials[i].id;
    return n;
}

int32_t tokenizer_special(const tokenizer *t, tokenizer_special_kind k) {
    return (int)k >= 0 && k < TOK_SPECIAL_COUNT ? t->role_id[k] : -1;
}

int tokenizer_is_special(const tokenizer *t, int32_t id) {
    return id >= 0 && id < t->n_vocab && t->kind[id] == TOKDEF_SPECIAL;
}

const uint8_t *tokenizer_token_bytes(const tokenizer *t, int32_t id, size_t *len) {
    if (id < 0 || id >= t->n_vocab) {
        *len = 0;
        return NULL;
    }
    *len = t->length[id];
    return t->blob + t->offset[id];
}

static uint64_t bytes_hash(const uint8_t *s, size_t len) {
    uint64_t h = UINT64_C(0xcbf29ce484222325);
    for (size_t i = 0; i < len; i++) h = (h ^ s[i]) * UINT64_C(0x100000001b3);
    return h;
}

/* Is id one the lookup holds: a token of the text (a byte only where tokens are bytes)? */
static int lookup_holds(const tokenizer *t, int32_t id) {
    return t->kind[id] == TOKDEF_TOKEN || t->kind[id] == TOKDEF_MERGE || (t->byte_level && t->kind[id] == TOKDEF_BYTE);
}

int tok_build_lookup(tokenizer *t, char *err, size_t errlen) {
    size_t cap = 16;
    while (cap < 2 * (size_t)t->n_vocab) cap *= 2;
    free(t->lookup);
    t->lookup = calloc(cap, sizeof *t->lookup);
    if (!t->lookup) {
        error_printf(err, errlen, "out of memory");
        return -1;
    }
    t->lookup_cap = cap;
    for (int32_t id = 0; id < t->n_vocab; id++) {
        if (!lookup_holds(t, id)) continue;
        const uint8_t *s = t->blob + t->offset[id];
        size_t i = (size_t)bytes_hash(s, t->length[id]) & (cap - 1);
        while (t->lookup[i] && tok_lookup(t, s, t->length[id]) < 0) i = (i + 1) & (cap - 1);
        if (!t->lookup[i]) t->lookup[i] = id + 1; /* the first of equal tokens wins */
    }
    return 0;
}

int32_t tok_lookup(const tokenizer *t, const uint8_t *s, size_t len) {
    if (!t->lookup) return -1;
    for (size_t i = (size_t)bytes_hash(s, len) & (t->lookup_cap - 1);; i = (i + 1) & (t->lookup_cap - 1)) {
        int32_t id = t->lookup[i] - 1;
        if (id < 0) return -1;
        if (t->length[id] == len && !memcmp(t->blob + t->offset[id], s, len)) return id;
    }
}

int tokenizer_decode(const tokenizer *t, const int32_t *ids, int64_t n, uint8_t **bytes, size_t *n_bytes, char *err,
                     size_t errlen) {
    return tokenizer_decode_at(t, ids, n, 1, bytes, n_bytes, err, errlen);
}

int tokenizer_decode_at(const tokenizer *t, const int32_t *ids, int64_t n, int at_start, uint8_t **bytes,
                        size_t *n_bytes, char *err, size_t errlen) {
    *bytes = NULL;
    *n_bytes = 0;
    size_t total = 0;
    for (int64_t i = 0; i < n; i++) {
        if (ids[i] < 0 || ids[i] >= t->n_vocab) {
            error_printf(err, errlen, "token %lld: id %ld is outside the vocabulary (0..%ld)", (long long)i,
                         (long)ids[i], (long)t->n_vocab - 1);
            return -1;
        }
        total += t->length[ids[i]];
    }
    if (t->version >= 2) {
        tok_buf out = {0};
        for (int64_t i = 0; i < n; i++) tok_decode_append(t, ids[i], at_start && i == 0, &out);
        if (tok_buf_put(&out, NULL, 0)) { /* never NULL, even when empty */
            error_printf(err, errlen, "out of memory");
            return -1;
        }
        *bytes = out.p;
        *n_bytes = out.len;
        return 0;
    }
    uint8_t *out = malloc(total ? total : 1);
    if (!out) {
        error_printf(err, errlen, "out of memory");
        return -1;
    }
    size_t at = 0;
    for (int64_t i = 0; i < n; i++) {
        memcpy(out + at, t->blob + t->offset[ids[i]], t->length[ids[i]]);
        at += t->length[ids[i]];
    }
    *bytes = out;
    *n_bytes = total;
    return 0;
}
