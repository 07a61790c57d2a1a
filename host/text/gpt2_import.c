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

int tokenizer_import_gpt2_memory(const char *vocab_text, size_t vocab_len, const char *vocab_name, const char *merges,
                                 size_t merges_len, const char *merges_name, tokenizer **out, char *err,
                                 size_t errlen) {
    *out = NULL;
    json_value *vocab = NULL;
    char msg[256];
    if (json_parse(vocab_text, vocab_len, &vocab, msg, sizeof msg)) {
        error_printf(err, errlen, "%s: %s", vocab_name, msg);
        return -1;
    }
    tokenizer *t = NULL;
    int32_t *id_of = NULL, *member_of_id = NULL;
    uint8_t *buf = NULL;
    string_map map = {.vocab = vocab};
    int rc = -1;
    size_t n = json_count(vocab);
    if (vocab->type != JSON_OBJECT || n < 256 || n > TOKENIZER_MAX_VOCAB) {
        error_printf(err, errlen, "%s: not a GPT-2 vocabulary (a JSON object of 256 to %d token strings -> ids)",
                     vocab_name, TOKENIZER_MAX_VOCAB);
        goto done;
    }
    map.cap = 16;
    while (map.cap < 2 * n) map.cap *= 2;
    map.slot_member = calloc(map.cap, sizeof *map.slot_member);
    id_of = malloc(n * sizeof *id_of);
    member_of_id = malloc(n * sizeof *member_of_id);
    t = tok_new((int32_t)n, PRETOK_GPT2);
    if (!map.slot_member || !id_of || !member_of_id || !t) {
        error_printf(err, errlen, "%s: out of memory", vocab_name);
        goto done;
    }
    /* ids: whole numbers, distinct, 0..n-1 */
    for (size_t i = 0; i < n; i++) member_of_id[i] = -1;
    for (size_t i = 0; i < n; i++) {
        const char *key = json_key_at(vocab, i);
        size_t klen = json_key_len_at(vocab, i);
        int64_t id;
        if (!json_as_int64(json_at(vocab, i), &id)) {
            error_printf(err, errlen, "%s: the id of " TOKEN_FMT " is not a whole number", vocab_name, TOKEN_ARG(key, klen));
            goto done;
        }
        if (id < 0 || id >= (int64_t)n) {
            error_printf(err, errlen, "%s: the id %lld of " TOKEN_FMT " is not contiguous: %zu tokens need ids 0..%zu",
                         vocab_name, (long long)id, TOKEN_ARG(key, klen), n, n - 1);
            goto done;
        }
        if (member_of_id[id] >= 0) {
            const char *other = json_key_at(vocab, (size_t)member_of_id[id]);
            size_t olen = json_key_len_at(vocab, (size_t)member_of_id[id]);
            error_printf(err, errlen, "%s: the id %lld is given to both " TOKEN_FMT " and " TOKEN_FMT, vocab_name,
                         (long long)id, TOKEN_ARG(other, olen), TOKEN_ARG(key, klen));
            goto done;
        }
        member_of_id[id] = (int32_t)i;
        id_of[i] = (int32_t)id;
        size_t s = (size_t)str_hash(key, klen) & (map.cap - 1);
        while (map.slot_member[s]) s = (s + 1) & (map.cap - 1); /* keys are unique: json.c refuses duplicates */
        map.slot_member[s] = (int32_t)i + 1;
    }
    /* the 256 byte tokens */
    int32_t byte_ids[256];
    for (int b = 0; b < 256; b++) {
        char key[4];
        size_t klen = (size_t)gpt2_byte_spell((unsigned)b, key);
        long m = map_find(&map, key, klen);
        if (m < 0) {
            error_printf(err, errlen, "%s: no token for the byte 0x%02X (\"%.*s\")", vocab_name, (unsigned)b, (int)klen, key);
            goto done;
        }
        byte_ids[b] = id_of[m];
    }
    if (tok_set_bytes(t, byte_ids, msg, sizeof msg)) {
        error_printf(err, errlen, "%s: %s", vocab_name, msg);
        goto done;
    }
    /* the merges, line by line */
    if (merges_len > GPT2_MAX_FILE || !(buf = malloc(merges_len + 1))) {
        error_printf(err, errlen, "%s: %s", merges_name, merges_len > GPT2_MAX_FILE ? "too large" : "out of memory");
        goto done;
    }
    long lineno = 0;
    for (const char *p = merges, *end = merges + merges_len; p < end;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *line = p, *line_end = nl ? nl : end;
        p = nl ? nl + 1 : end;
        lineno++;
        if (line_end > line && line_end[-1] == '\r') line_end--;
        size_t len = (size_t)(line_end - line);
        if (lineno == 1 && len >= 8 && !memcmp(line, "#version", 8)) continue;
        if (len == 0 && p == end) break; /* a last empty line */
        const char *sp = memchr(line, ' ', len);
        if (!sp || sp == line || sp + 1 == line_end || memchr(sp + 1, ' ', (size_t)(line_end - sp - 1))) {
            error_printf(err, errlen, "%s:%ld: expected two tokens separated by one space", merges_name, lineno);
            goto done;
        }
        const char *part[2] = {line, sp + 1};
        size_t plen[2] = {(size_t)(sp - line), (size_t)(line_end - sp - 1)};
        int32_t pid[2];
        for (int k = 0; k < 2; k++) {
            long m = map_find(&map, part[k], plen[k]);
            if (m < 0) {
                error_printf(err, errlen, "%s:%ld: " TOKEN_FMT " is not in %s", merges_name, lineno,
                             TOKEN_ARG(part[k], plen[k]), vocab_name);
                goto done;
            }
            pid[k] = id_of[m];
        }
        /* the result is the two strings joined */
        memcpy(buf, line, plen[0]);
        memcpy(buf + plen[0], sp + 1, plen[1]);
        long m = map_find(&map, (const char *)buf, plen[0] + plen[1]);
        if (m < 0) {
            error_printf(err, errlen, "%s:%ld: the merge's result " TOKEN_FMT " is not in %s", merges_name, lineno,
                         TOKEN_ARG((const char *)buf, plen[0] + plen[1]), vocab_name);
            goto done;
        }
        if (tok_add_merge(t, pid[0], pid[1], id_of[m], msg, sizeof msg)) {
            error_printf(err, errlen, "%s:%ld: %.*s %.*s: %s", merges_name, lineno, TOKEN_ARG(part[0], plen[0]),
                         TOKEN_ARG(part[1], plen[1]), msg);
            goto done;
        }
    }
    /* what is left are the specials */
    for (int32_t id = 0; id < (int32_t)n; id++) {
        if (t->kind[id] != TOKDEF_NONE) continue;
        const char *key = json_key_at(vocab, (size_t)member_of_id[id]);
        size_t klen = json_key_len_at(vocab, (size_t)member_of_id[id]);
        unsigned roles = klen == 13 && !memcmp(key, "<|endoftext|>", 13) ? (1u << TOK_BOS | 1u << TOK_EOS) : 0;
        if (tok_add_special(t, id, key, klen, roles, msg, sizeof msg)) {
            error_printf(err, errlen, "%s: " TOKEN_FMT " (id %ld) is neither a byte, a merge's result nor a special token: %s",
                         vocab_name, TOKEN_ARG(key, klen), (long)id, msg);
            goto done;
        }
    }
    if (tok_finish(t, msg, sizeof msg)) {
        error_printf(err, errlen, "%s: %s", vocab_name, msg);
        goto done;
    }
    *out = t;
    t = NULL;
    rc = 0;
done:
    tokenizer_free(t);
    json_free(vocab);
    free(map.slot_member);
    free(id_of);
    free(member_of_id);
    free(buf);
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
