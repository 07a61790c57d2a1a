/* tokenizer_from_gguf: a tokenizer from a GGUF file's tokenizer.ggml.* keys, as llama.cpp
 * reads them (its llama-vocab.cpp):
 *   model "gpt2": byte-level BPE; the tokens spell bytes through GPT-2's byte-to-unicode map,
 *     merges "A B" by rank; "pre" names the pre-tokenizer's patterns: gpt-2 (or none: kiln's
 *     own files before version 2 wrote none) is GPT-2's, read as a version 1 tokenizer when it
 *     fits one (kiln's GPT-2 exports); llama-bpe / llama3 / llama-v3 are Llama 3's (and a
 *     piece that is a token is that token), qwen2 / deepseek-r1-qwen Qwen2's, smollm digits
 *     alone then GPT-2's. Each pattern cuts every piece of the one before, as llama.cpp does.
 *   model "llama": SentencePiece's BPE (Llama 2): the tokens are text with "▁" for spaces,
 *     "<0xNN>" byte tokens (type 6) for characters without one; merges from
 *     tokenizer.ggml.merges when there are any, else from the scores (a pair merges into the
 *     token of higher score first, as llama.cpp's SentencePiece tokenizer does).
 * Token types 2 (unknown), 3 (control), 4 (user-defined) and 5 (unused) are specials.
 * Roles from bos/eos/eot/eom/padding/unknown/seperator/cls/mask_token_id; the end of
 * generation is EOS, EOT, EOM and the control tokens llama.cpp takes for one by their text. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/error_printf.h"
#include "formats/gguf.h"
#include "text/tokenizer_internal.h"

enum { TYPE_NORMAL = 1, TYPE_UNKNOWN = 2, TYPE_CONTROL = 3, TYPE_USER = 4, TYPE_UNUSED = 5, TYPE_BYTE = 6 };

#define GPT2_PATTERN "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)"
#define LLAMA3_PATTERN                                                                                                 \
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "                \
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define QWEN2_PATTERN                                                                                                  \
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| "                     \
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"

/* llama.cpp's pre-tokenizer names: the patterns in order, and its defaults. */
static const struct gguf_pre {
    const char *names[4];
    const char *patterns[2];
    int ignore_merges, add_bos;
} pres[] = {
    {{"gpt-2"}, {GPT2_PATTERN}, 0, 0},
    {{"llama-bpe", "llama3", "llama-v3"}, {LLAMA3_PATTERN}, 1, 1},
    {{"qwen2", "deepseek-r1-qwen"}, {QWEN2_PATTERN}, 0, 0},
    {{"smollm"}, {"\\p{N}", GPT2_PATTERN}, 0, 0},
};

const char *tok_gguf_pre_name(int k, const char *const **patterns) {
    if (k < 0 || k >= (int)(sizeof pres / sizeof pres[0])) return NULL;
    if (patterns) *patterns = pres[k].patterns;
    return pres[k].names[0];
}

typedef struct gguf_read {
    const gguf_file *g;
    const gguf_kv *tokens, *types, *merges, *scores;
    int32_t n;
    tokenizer *t;
    char msg[256];
} gguf_read;

#define GR_ERROR(r, ...) (error_printf((r)->msg, sizeof (r)->msg, __VA_ARGS__), -1)

static int32_t type_of(const gguf_read *r, int32_t id) {
    int32_t type = TYPE_NORMAL;
    if (r->types) memcpy(&type, (const unsigned char *)r->types->data + 4 * (size_t)id, 4);
    return type;
}

static int is_special_type(int32_t type) {
    return type == TYPE_UNKNOWN || type == TYPE_CONTROL || type == TYPE_USER || type == TYPE_UNUSED;
}

static const gguf_kv *array_kv(const gguf_file *g, const char *key, gguf_type elem) {
    const gguf_kv *kv = gguf_find_kv(g, key);
    return kv && kv->type == GGUF_ARRAY && kv->elem_type == elem ? kv : NULL;
}

/* A role's id key, or -1. */
static int64_t role_id(const gguf_read *r, const char *key) {
    const gguf_kv *kv = gguf_find_kv(r->g, key);
    if (!kv || (kv->type != GGUF_U32 && kv->type != GGUF_I32 && kv->type != GGUF_U64 && kv->type != GGUF_I64)) return -1;
    int64_t v = kv->type == GGUF_U32 || kv->type == GGUF_U64 ? (int64_t)kv->u : kv->i;
    return v >= 0 && v < r->n ? v : -1;
}

static unsigned roles_of(const gguf_read *r, int32_t id) {
    static const struct { const char *key; int role; } keys[] = {
        {"tokenizer.ggml.bos_token_id", TOK_BOS},        {"tokenizer.ggml.eos_token_id", TOK_EOS},
        {"tokenizer.ggml.padding_token_id", TOK_PAD},    {"tokenizer.ggml.unknown_token_id", TOKROLE_UNK},
        {"tokenizer.ggml.seperator_token_id", TOK_SEP},  {"tokenizer.ggml.cls_token_id", TOK_CLS},
        {"tokenizer.ggml.mask_token_id", TOK_MASK},      {"tokenizer.ggml.eot_token_id", TOKROLE_EOG},
        {"tokenizer.ggml.eom_token_id", TOKROLE_EOG}};
    unsigned roles = 0;
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
        if (role_id(r, keys[k].key) == id) roles |= 1u << keys[k].role;
    const char *s = r->tokens->strs[id];
    if (!(roles >> TOK_EOS & 1) && tok_is_eog_name(s, strlen(s))) roles |= 1u << TOKROLE_EOG;
    if (roles >> TOK_EOS & 1) roles &= ~(1u << TOKROLE_EOG);
    return roles;
}

/* "<0xNN>": NN, else -1. */
static int byte_token(const char *s) {
    unsigned v;
    char end;
    return strlen(s) == 6 && sscanf(s, "<0x%2X%c", &v, &end) == 2 && end == '>' ? (int)v : -1;
}

/* The ids: bytes first (one-byte tokens, or <0xNN> of type 6), then specials and tokens. */
static int read_tokens(gguf_read *r) {
    tokenizer *t = r->t;
    int32_t byte_ids[256];
    char msg[200];
    uint8_t *buf = NULL;
    size_t cap = 0;
    int rc = 0;
    for (int b = 0; b < 256; b++) byte_ids[b] = -1;
    for (int32_t id = 0; id < r->n && !rc; id++) {
        int32_t type = type_of(r, id);
        const char *s = r->tokens->strs[id];
        size_t len = strlen(s);
        if (len + 1 > cap && !(buf = realloc(buf, cap = 2 * len + 16))) return GR_ERROR(r, "out of memory");
        if (is_special_type(type)) continue;
        long n = tok_unspell(t, s, strlen(s), buf);
        int byte = t->byte_level ? (n == 1 ? buf[0] : -1) : type == TYPE_BYTE ? byte_token(s) : -1;
        if (n < 0) rc = GR_ERROR(r, "tokenizer.ggml.tokens[%ld] \"%.40s\" is not in GPT-2's spelling of bytes", (long)id, s);
        else if (!t->byte_level && type == TYPE_BYTE && byte < 0) rc = GR_ERROR(r, "tokenizer.ggml.tokens[%ld] \"%.40s\" is a byte token but not <0xNN>", (long)id, s);
        else if (byte >= 0 && byte_ids[byte] < 0) byte_ids[byte] = id;
    }
    for (int b = 0; b < 256 && !rc; b++)
        if (byte_ids[b] < 0) rc = GR_ERROR(r, "tokenizer.ggml.tokens: no token for the byte 0x%02X", (unsigned)b);
    if (!rc && tok_set_bytes(t, byte_ids, msg, sizeof msg)) rc = GR_ERROR(r, "tokenizer.ggml.tokens: %s", msg);
    for (int32_t id = 0; id < r->n && !rc; id++) {
        int32_t type = type_of(r, id);
        const char *s = r->tokens->strs[id];
        if (t->kind[id] == TOKDEF_BYTE) continue;
        if (is_special_type(type)) {
            if (tok_add_special(t, id, s, strlen(s), roles_of(r, id), msg, sizeof msg))
                rc = GR_ERROR(r, "tokenizer.ggml.tokens[%ld] \"%.40s\": %s", (long)id, s, msg);
        } else {
            long n = tok_unspell(t, s, strlen(s), buf);
            if (tok_add_token(t, id, buf, (size_t)n, msg, sizeof msg))
                rc = GR_ERROR(r, "tokenizer.ggml.tokens[%ld] \"%.40s\": %s", (long)id, s, msg);
        }
    }
    free(buf);
    return rc;
}

/* tokenizer.ggml.merges: "A B" by rank, each joining into the token of their texts. */
static int read_merges(gguf_read *r) {
    tok_buf b = {0};
    char msg[200];
    int rc = 0;
    for (uint64_t k = 0; k < r->merges->count && !rc; k++) {
        const char *pair = r->merges->strs[k], *space = strchr(pair, ' ');
        int32_t id[3] = {-1, -1, -1};
        size_t at = 0;
        b.len = 0;
        if (space && !strchr(space + 1, ' ') && tok_buf_put(&b, NULL, strlen(pair)) == 0) {
            const char *part[2] = {pair, space + 1};
            size_t plen[2] = {(size_t)(space - pair), strlen(space + 1)};
            for (int s = 0; s < 2; s++) {
                long n = tok_unspell(r->t, part[s], plen[s], b.p + at);
                if (n < 0) break;
                id[s] = tok_lookup(r->t, b.p + at, (size_t)n);
                at += (size_t)n;
            }
            if (id[0] >= 0 && id[1] >= 0) id[2] = tok_lookup(r->t, b.p, at);
        }
        if (id[2] < 0) rc = GR_ERROR(r, "tokenizer.ggml.merges[%llu] \"%.60s\" names no tokens", (unsigned long long)k, pair);
        else if (tok_add_merge(r->t, id[0], id[1], id[2], msg, sizeof msg))
            rc = GR_ERROR(r, "tokenizer.ggml.merges[%llu]: %s", (unsigned long long)k, msg);
    }
    free(b.p);
    return rc;
}

/* qsort's comparison of ids by descending score, then ascending id (no context argument). */
static const float *g_scores;
static int by_score(const void *a, const void *b) {
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    if (g_scores[x] != g_scores[y]) return g_scores[x] > g_scores[y] ? -1 : 1;
    return x < y ? -1 : x > y;
}

/* SentencePiece without merges: every way to cut a token into two tokens is a merge, the
 * tokens of higher score first, so that merging by rank merges by score. */
static int merges_from_scores(gguf_read *r) {
    tokenizer *t = r->t;
    int32_t *order = malloc((size_t)r->n * sizeof *order);
    float *scores = malloc((size_t)r->n * sizeof *scores);
    char msg[200];
    int rc = order && scores ? 0 : GR_ERROR(r, "out of memory");
    for (int32_t i = 0; i < r->n && !rc; i++) {
        order[i] = i;
        memcpy(&scores[i], (const unsigned char *)r->scores->data + 4 * (size_t)i, 4);
    }
    if (!rc) {
        g_scores = scores;
        qsort(order, (size_t)r->n, sizeof *order, by_score);
    }
    for (int32_t k = 0; k < r->n && !rc; k++) {
        int32_t id = order[k];
        if (t->kind[id] != TOKDEF_TOKEN) continue;
        const uint8_t *s = t->blob + t->offset[id];
        size_t len = t->length[id];
        for (size_t cut = 1; cut < len && !rc; cut++) {
            if ((s[cut] & 0xC0) == 0x80) continue; /* cut between characters only */
            int32_t left = tok_lookup(t, s, cut), right = tok_lookup(t, s + cut, len - cut);
            if (left >= 0 && right >= 0 && tok_pair_rank(t, left, right) < 0 &&
                tok_add_merge(t, left, right, id, msg, sizeof msg))
                rc = GR_ERROR(r, "tokenizer.ggml.scores: %s", msg);
        }
    }
    free(order);
    free(scores);
    return rc;
}

static int add_step(gguf_read *r, int stage, tok_step st) {
    char msg[200];
    return tok_add_step(r->t, stage, &st, msg, sizeof msg) ? GR_ERROR(r, "%s", msg) : 0;
}

static char *dup_string(const char *s, size_t *len) {
    *len = strlen(s);
    char *d = malloc(*len + 1);
    if (d) memcpy(d, s, *len + 1);
    return d;
}

/* The steps of a gpt2 model's pre-tokenizer `pre`. */
static int byte_level_steps(gguf_read *r, const char *pre, int *add_bos) {
    for (size_t k = 0; k < sizeof pres / sizeof pres[0]; k++)
        for (int n = 0; n < 4 && pres[k].names[n]; n++) {
            if (strcmp(pres[k].names[n], pre)) continue;
            r->t->ignore_merges = pres[k].ignore_merges;
            *add_bos = pres[k].add_bos;
            for (int p = 0; p < 2 && pres[k].patterns[p]; p++) {
                tok_step st = {.kind = STEP_SPLIT, .regex_source = 1, .behaviour = SPLIT_ISOLATED};
                if (!(st.a = dup_string(pres[k].patterns[p], &st.a_len)) || add_step(r, TOK_STAGE_PRETOKENIZER, st))
                    return r->msg[0] ? -1 : GR_ERROR(r, "out of memory");
            }
            return add_step(r, TOK_STAGE_PRETOKENIZER, (tok_step){.kind = STEP_BYTELEVEL}) ||
                           add_step(r, TOK_STAGE_DECODER, (tok_step){.kind = STEP_BYTELEVEL})
                       ? -1
                       : 0;
        }
    return GR_ERROR(r, "tokenizer.ggml.pre \"%.40s\" is not supported (kiln reads gpt-2, llama-bpe, llama3, llama-v3, "
                       "qwen2, deepseek-r1-qwen, smollm)", pre);
}

/* SentencePiece's: "▁" for spaces (and in front, with add_space_prefix), and back. */
static int sentencepiece_steps(gguf_read *r) {
    static const char meta[] = "\xE2\x96\x81";
    const gguf_kv *prefix = gguf_find_kv(r->g, "tokenizer.ggml.add_space_prefix");
    int add_prefix = !prefix || prefix->type != GGUF_BOOL || prefix->u;
    tok_step st[6] = {{.kind = STEP_PREPEND}, {.kind = STEP_REPLACE}, {.kind = STEP_REPLACE}, {.kind = STEP_BYTEFALLBACK},
                      {.kind = STEP_FUSE}, {.kind = STEP_STRIP, .start = 1}};
    int stage[6] = {TOK_STAGE_NORMALIZER, TOK_STAGE_NORMALIZER, TOK_STAGE_DECODER, TOK_STAGE_DECODER,
                    TOK_STAGE_DECODER, TOK_STAGE_DECODER};
    st[0].a = dup_string(meta, &st[0].a_len);
    st[1].a = dup_string(" ", &st[1].a_len), st[1].b = dup_string(meta, &st[1].b_len);
    st[2].a = dup_string(meta, &st[2].a_len), st[2].b = dup_string(" ", &st[2].b_len);
    st[5].a = dup_string(" ", &st[5].a_len);
    r->t->byte_fallback = 1;
    int rc = 0;
    for (int k = 0; k < 6; k++) {
        if (rc || (!add_prefix && (k == 0 || k == 5))) {
            tok_step_clear(&st[k]);
            continue;
        }
        rc = add_step(r, stage[k], st[k]);
    }
    return rc;
}

static int flag(const gguf_file *g, const char *key, int dflt) {
    const gguf_kv *kv = gguf_find_kv(g, key);
    return kv && kv->type == GGUF_BOOL ? (int)kv->u : dflt;
}

/* Version 2 from the keys; model is "gpt2" or "llama". */
static int read_v2(gguf_read *r, const char *model, const char *pre) {
    if (!(r->t = tok_new(r->n, PRETOK_STEPS))) return GR_ERROR(r, "out of memory");
    r->t->version = 2;
    int add_bos = 1;
    r->t->byte_level = !strcmp(model, "gpt2");
    if (r->t->byte_level ? byte_level_steps(r, pre, &add_bos) : sentencepiece_steps(r)) return -1;
    r->t->add_bos = flag(r->g, "tokenizer.ggml.add_bos_token", add_bos);
    r->t->add_eos = flag(r->g, "tokenizer.ggml.add_eos_token", 0);
    char msg[200];
    if (read_tokens(r) || (tok_build_lookup(r->t, msg, sizeof msg) && GR_ERROR(r, "%s", msg))) return -1;
    if (r->merges ? read_merges(r) : !r->t->byte_level && r->scores ? merges_from_scores(r) : 0) return -1;
    return tok_finish(r->t, msg, sizeof msg) ? GR_ERROR(r, "%s", msg) : 0;
}

int tokenizer_from_gguf(const gguf_file *g, tokenizer **out, char *err, size_t errlen) {
    gguf_read r = {.g = g};
    const char *model = NULL, *pre = NULL;
    *out = NULL;
    if (gguf_get_string(g, "tokenizer.ggml.model", &model, err, errlen)) return -1;
    if (strcmp(model, "gpt2") && strcmp(model, "llama")) {
        error_printf(err, errlen, "tokenizer.ggml.model \"%.40s\" is not supported (kiln reads gpt2 and llama)", model);
        return -1;
    }
    r.tokens = array_kv(g, "tokenizer.ggml.tokens", GGUF_STRING);
    if (!r.tokens || r.tokens->count < 256 || r.tokens->count > TOKENIZER_MAX_VOCAB) {
        error_printf(err, errlen, "tokenizer.ggml.tokens is not an array of 256 to %d strings", TOKENIZER_MAX_VOCAB);
        return -1;
    }
    r.n = (int32_t)r.tokens->count;
    r.types = array_kv(g, "tokenizer.ggml.token_type", GGUF_I32);
    r.merges = array_kv(g, "tokenizer.ggml.merges", GGUF_STRING);
    r.scores = array_kv(g, "tokenizer.ggml.scores", GGUF_F32);
    if (r.types && (int64_t)r.types->count != r.n) r.types = NULL;
    if (r.scores && (int64_t)r.scores->count != r.n) r.scores = NULL;
    if (r.merges && r.merges->count == 0) r.merges = NULL;
    const gguf_kv *pre_kv = gguf_find_kv(g, "tokenizer.ggml.pre");
    pre = pre_kv && pre_kv->type == GGUF_STRING ? pre_kv->str : "gpt-2";
    if (!strcmp(model, "gpt2") && !strcmp(pre, "gpt-2") && tok_from_gguf_v1(r.tokens, r.types, r.merges, out) == 0)
        return 0; /* GPT-2's own, as kiln read it before version 2 */
    if (read_v2(&r, model, pre)) {
        tokenizer_free(r.t);
        error_printf(err, errlen, "%s", r.msg);
        return -1;
    }
    *out = r.t;
    return 0;
}
