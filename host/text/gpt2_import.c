/* GPT-2's tokenizer from Hugging Face's files: vocab.json (token string -> id) and
 * merges.txt (one "LEFT RIGHT" pair a line, in rank order).
 *
 * The token strings spell bytes through GPT-2's byte-to-unicode map (bytes_to_unicode() in
 * OpenAI's encoder.py): the printable bytes ! .. ~, ¡ .. ¬ and ® .. ÿ stand for themselves
 * (as code points), and the other 68 bytes, in increasing order, for U+0100, U+0101, ... so
 * a space is "Ġ" (U+0120). A vocab entry that is one byte is that byte's token; one that is
 * a merge's result is defined by the merge; any other entry ("<|endoftext|>") is a special
 * token, and "<|endoftext|>" plays BOS and EOS. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "formats/error_printf.h"
#include "formats/file_open.h"
#include "formats/json.h"
#include "text/gpt2_bytes.h"
#include "text/tokenizer_internal.h"

/* GPT-2's merges.txt is 456 KB and vocab.json 1 MB; a file past this is not one. */
#define GPT2_MAX_FILE ((size_t)64 << 20)

/* A token string -> id map by open addressing over the vocab's strings. */
typedef struct string_map {
    const json_value *vocab;
    int32_t *slot_member; /* member index + 1; 0: empty */
    size_t cap;
} string_map;

static uint64_t str_hash(const char *s, size_t len) {
    uint64_t h = UINT64_C(0xcbf29ce484222325);
    for (size_t i = 0; i < len; i++) h = (h ^ (uint8_t)s[i]) * UINT64_C(0x100000001b3);
    return h;
}

/* The member index of key, or -1. */
static long map_find(const string_map *m, const char *key, size_t len) {
    for (size_t i = (size_t)str_hash(key, len) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        int32_t k = m->slot_member[i];
        if (!k) return -1;
        if (json_key_len_at(m->vocab, (size_t)(k - 1)) == len && !memcmp(json_key_at(m->vocab, (size_t)(k - 1)), key, len))
            return k - 1;
    }
}

/* A token's name for messages: at most 40 bytes of it. */
#define TOKEN_FMT "\"%.*s\""
#define TOKEN_ARG(s, len) (int)((len) > 40 ? 40 : (len)), (s)

/* Writes the message into the import's err; -1. */
#define IMPORT_ERROR(im, ...) (error_printf((im)->err, (im)->errlen, __VA_ARGS__), -1)

/* One import: the parsed vocab.json with its token -> member map, each member's id and each
 * id's member, and the tokenizer being built. */
typedef struct gpt2_import {
    const char *vocab_name, *merges_name;
    char *err;
    size_t errlen;
    json_value *vocab;
    size_t n; /* tokens */
    string_map map;
    int32_t *id_of;        /* member index -> id */
    int32_t *member_of_id; /* id -> member index */
    tokenizer *t;
} gpt2_import;

/* vocab.json: a JSON object of 256 to TOKENIZER_MAX_VOCAB members; the tables sized for it. */
static int open_vocab(gpt2_import *im, const char *text, size_t len) {
    char msg[256];
    if (json_parse(text, len, &im->vocab, msg, sizeof msg)) return IMPORT_ERROR(im, "%s: %s", im->vocab_name, msg);
    size_t n = im->n = json_count(im->vocab);
    if (im->vocab->type != JSON_OBJECT || n < 256 || n > TOKENIZER_MAX_VOCAB)
        return IMPORT_ERROR(im, "%s: not a GPT-2 vocabulary (a JSON object of 256 to %d token strings -> ids)",
                            im->vocab_name, TOKENIZER_MAX_VOCAB);
    im->map = (string_map){.vocab = im->vocab, .cap = 16};
    while (im->map.cap < 2 * n) im->map.cap *= 2;
    im->map.slot_member = calloc(im->map.cap, sizeof *im->map.slot_member);
    im->id_of = malloc(n * sizeof *im->id_of);
    im->member_of_id = malloc(n * sizeof *im->member_of_id);
    im->t = tok_new((int32_t)n, PRETOK_GPT2);
    if (!im->map.slot_member || !im->id_of || !im->member_of_id || !im->t)
        return IMPORT_ERROR(im, "%s: out of memory", im->vocab_name);
    return 0;
}

/* The ids: whole numbers, distinct, 0..n-1; each token goes into the map. */
static int read_ids(gpt2_import *im) {
    const json_value *vocab = im->vocab;
    size_t n = im->n;
    for (size_t i = 0; i < n; i++) im->member_of_id[i] = -1;
    for (size_t i = 0; i < n; i++) {
        const char *key = json_key_at(vocab, i);
        size_t klen = json_key_len_at(vocab, i);
        int64_t id;
        if (!json_as_int64(json_at(vocab, i), &id))
            return IMPORT_ERROR(im, "%s: the id of " TOKEN_FMT " is not a whole number", im->vocab_name,
                                TOKEN_ARG(key, klen));
        if (id < 0 || id >= (int64_t)n)
            return IMPORT_ERROR(im, "%s: the id %lld of " TOKEN_FMT " is not contiguous: %zu tokens need ids 0..%zu",
                                im->vocab_name, (long long)id, TOKEN_ARG(key, klen), n, n - 1);
        if (im->member_of_id[id] >= 0) {
            const char *other = json_key_at(vocab, (size_t)im->member_of_id[id]);
            size_t olen = json_key_len_at(vocab, (size_t)im->member_of_id[id]);
            return IMPORT_ERROR(im, "%s: the id %lld is given to both " TOKEN_FMT " and " TOKEN_FMT, im->vocab_name,
                                (long long)id, TOKEN_ARG(other, olen), TOKEN_ARG(key, klen));
        }
        im->member_of_id[id] = (int32_t)i;
        im->id_of[i] = (int32_t)id;
        size_t s = (size_t)str_hash(key, klen) & (im->map.cap - 1);
        while (im->map.slot_member[s]) s = (s + 1) & (im->map.cap - 1); /* keys are unique: json.c refuses duplicates */
        im->map.slot_member[s] = (int32_t)i + 1;
    }
    return 0;
}

/* The 256 byte tokens, by their spelling in GPT-2's byte-to-unicode map. */
static int import_bytes(gpt2_import *im) {
    int32_t byte_ids[256];
    char msg[256];
    for (int b = 0; b < 256; b++) {
        char key[4];
        size_t klen = (size_t)gpt2_byte_spell((unsigned)b, key);
        long m = map_find(&im->map, key, klen);
        if (m < 0)
            return IMPORT_ERROR(im, "%s: no token for the byte 0x%02X (\"%.*s\")", im->vocab_name, (unsigned)b,
                                (int)klen, key);
        byte_ids[b] = im->id_of[m];
    }
    if (tok_set_bytes(im->t, byte_ids, msg, sizeof msg)) return IMPORT_ERROR(im, "%s: %s", im->vocab_name, msg);
    return 0;
}

/* One line of merges.txt, "LEFT RIGHT" (no '\n' or '\r'): both tokens and the one they join
 * into must be in the vocabulary. buf holds the line's length. */
static int import_merge(gpt2_import *im, const char *line, const char *line_end, long lineno, char *buf) {
    char msg[256];
    const char *sp = memchr(line, ' ', (size_t)(line_end - line));
    if (!sp || sp == line || sp + 1 == line_end || memchr(sp + 1, ' ', (size_t)(line_end - sp - 1)))
        return IMPORT_ERROR(im, "%s:%ld: expected two tokens separated by one space", im->merges_name, lineno);
    const char *part[2] = {line, sp + 1};
    size_t plen[2] = {(size_t)(sp - line), (size_t)(line_end - sp - 1)};
    int32_t pid[2];
    for (int k = 0; k < 2; k++) {
        long m = map_find(&im->map, part[k], plen[k]);
        if (m < 0)
            return IMPORT_ERROR(im, "%s:%ld: " TOKEN_FMT " is not in %s", im->merges_name, lineno,
                                TOKEN_ARG(part[k], plen[k]), im->vocab_name);
        pid[k] = im->id_of[m];
    }
    /* the result is the two strings joined */
    memcpy(buf, line, plen[0]);
    memcpy(buf + plen[0], sp + 1, plen[1]);
    long m = map_find(&im->map, buf, plen[0] + plen[1]);
    if (m < 0)
        return IMPORT_ERROR(im, "%s:%ld: the merge's result " TOKEN_FMT " is not in %s", im->merges_name, lineno,
                            TOKEN_ARG(buf, plen[0] + plen[1]), im->vocab_name);
    if (tok_add_merge(im->t, pid[0], pid[1], im->id_of[m], msg, sizeof msg))
        return IMPORT_ERROR(im, "%s:%ld: %.*s %.*s: %s", im->merges_name, lineno, TOKEN_ARG(part[0], plen[0]),
                            TOKEN_ARG(part[1], plen[1]), msg);
    return 0;
}

/* merges.txt, line by line: an optional "#version" first line, a last line may be empty. */
static int import_merges(gpt2_import *im, const char *merges, size_t merges_len) {
    char *buf;
    if (merges_len > GPT2_MAX_FILE || !(buf = malloc(merges_len + 1)))
        return IMPORT_ERROR(im, "%s: %s", im->merges_name, merges_len > GPT2_MAX_FILE ? "too large" : "out of memory");
    long lineno = 0;
    int rc = 0;
    for (const char *p = merges, *end = merges + merges_len; p < end && !rc;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *line = p, *line_end = nl ? nl : end;
        p = nl ? nl + 1 : end;
        lineno++;
        if (line_end > line && line_end[-1] == '\r') line_end--;
        size_t len = (size_t)(line_end - line);
        if (lineno == 1 && len >= 8 && !memcmp(line, "#version", 8)) continue;
        if (len == 0 && p == end) break; /* a last empty line */
        rc = import_merge(im, line, line_end, lineno, buf);
    }
    free(buf);
    return rc;
}

/* The ids that are neither a byte nor a merge's result are special tokens. */
static int import_specials(gpt2_import *im) {
    char msg[256];
    for (int32_t id = 0; id < (int32_t)im->n; id++) {
        if (im->t->kind[id] != TOKDEF_NONE) continue;
        const char *key = json_key_at(im->vocab, (size_t)im->member_of_id[id]);
        size_t klen = json_key_len_at(im->vocab, (size_t)im->member_of_id[id]);
        unsigned roles = klen == 13 && !memcmp(key, "<|endoftext|>", 13) ? (1u << TOK_BOS | 1u << TOK_EOS) : 0;
        if (tok_add_special(im->t, id, key, klen, roles, msg, sizeof msg))
            return IMPORT_ERROR(
                im, "%s: " TOKEN_FMT " (id %ld) is neither a byte, a merge's result nor a special token: %s",
                im->vocab_name, TOKEN_ARG(key, klen), (long)id, msg);
    }
    if (tok_finish(im->t, msg, sizeof msg)) return IMPORT_ERROR(im, "%s: %s", im->vocab_name, msg);
    return 0;
}

int tokenizer_import_gpt2_memory(const char *vocab_text, size_t vocab_len, const char *vocab_name, const char *merges,
                                 size_t merges_len, const char *merges_name, tokenizer **out, char *err,
                                 size_t errlen) {
    *out = NULL;
    gpt2_import im = {.vocab_name = vocab_name, .merges_name = merges_name, .err = err, .errlen = errlen};
    int rc = open_vocab(&im, vocab_text, vocab_len);
    if (!rc) rc = read_ids(&im);
    if (!rc) rc = import_bytes(&im);
    if (!rc) rc = import_merges(&im, merges, merges_len);
    if (!rc) rc = import_specials(&im);
    if (!rc) {
        *out = im.t;
        im.t = NULL;
    }
    tokenizer_free(im.t);
    json_free(im.vocab);
    free(im.map.slot_member);
    free(im.id_of);
    free(im.member_of_id);
    return rc;
}

/* The whole of a small file, malloc'd. */
static char *read_small_file(const char *path, const char *role, size_t *len, char *err, size_t errlen) {
    struct stat st;
    FILE *f = file_open_read(path, role, &st, err, errlen);
    if (!f) return NULL;
    if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size > GPT2_MAX_FILE) {
        fclose(f);
        error_printf(err, errlen, "%s: %s", path, S_ISREG(st.st_mode) ? "too large for a GPT-2 tokenizer file" : "not a regular file");
        return NULL;
    }
    char *text = malloc((size_t)st.st_size + 1);
    if (!text) {
        fclose(f);
        error_printf(err, errlen, "%s: out of memory", path);
        return NULL;
    }
    *len = fread(text, 1, (size_t)st.st_size, f);
    int bad = ferror(f) || *len != (size_t)st.st_size;
    fclose(f);
    if (bad) {
        free(text);
        error_printf(err, errlen, "%s: cannot read %s", path, role);
        return NULL;
    }
    return text;
}

int tokenizer_import_gpt2(const char *vocab_path, const char *merges_path, tokenizer **out, char *err, size_t errlen) {
    *out = NULL;
    size_t vlen = 0, mlen = 0;
    char *v = read_small_file(vocab_path, "the vocabulary (vocab.json)", &vlen, err, errlen);
    if (!v) return -1;
    char *m = read_small_file(merges_path, "the merges (merges.txt)", &mlen, err, errlen);
    if (!m) {
        free(v);
        return -1;
    }
    int rc = tokenizer_import_gpt2_memory(v, vlen, vocab_path, m, mlen, merges_path, out, err, errlen);
    free(v);
    free(m);
    return rc;
}
