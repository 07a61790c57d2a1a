/* tokenizer_to_gguf: a tokenizer as llama.cpp's tokenizer.ggml.* keys (the keys
 * convert_hf_to_gguf.py writes), so that llama.cpp and tokenizer_from_gguf read it back.
 *   - version 1 (GPT-2's, kiln's trained BPE, bytes): model gpt2, pre gpt-2, exactly as kiln
 *     wrote them before version 2;
 *   - version 2 byte-level: model gpt2, pre named by its patterns (gpt-2, llama-bpe, qwen2,
 *     smollm; a Qwen NFC normalizer is left to the text, as llama.cpp does), the tokens
 *     spelled through GPT-2's map, the added tokens as control tokens;
 *   - version 2 SentencePiece: model llama, the tokens' text, <0xNN> byte tokens (type 6),
 *     scores that order the merges (the result of the merge of rank r scores -(r + 1)) and
 *     the merges themselves, add_space_prefix when the normalizer prepends "▁".
 * Then the special ids and add_bos_token / add_eos_token. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/error_printf.h"
#include "formats/gguf.h"
#include "text/gpt2_bytes.h"
#include "text/tokenizer_internal.h"

enum { TYPE_NORMAL = 1, TYPE_UNKNOWN = 2, TYPE_CONTROL = 3, TYPE_BYTE = 6 };

/* Token id's GGUF text (malloc'd): a special's name; a byte-level token spelled through
 * GPT-2's map; a byte of SentencePiece as <0xNN>; else its text. */
static char *token_text(const tokenizer *t, int32_t id) {
    const uint8_t *s = t->blob + t->offset[id];
    size_t n = t->length[id], at = 0;
    char *out = malloc(2 * n + 8);
    if (!out) return NULL;
    if (t->kind[id] == TOKDEF_SPECIAL || (t->version >= 2 && !t->byte_level && t->kind[id] != TOKDEF_BYTE)) {
        memcpy(out, s, n);
        at = n;
    } else if (t->version >= 2 && !t->byte_level) {
        at = (size_t)snprintf(out, 8, "<0x%02X>", s[0]);
    } else {
        for (size_t i = 0; i < n; i++) at += (size_t)gpt2_byte_spell(s[i], out + at);
    }
    out[at] = '\0';
    return out;
}

static int token_type(const tokenizer *t, int32_t id) {
    if (t->kind[id] == TOKDEF_SPECIAL) return id == t->role_id[TOKROLE_UNK] ? TYPE_UNKNOWN : TYPE_CONTROL;
    if (t->version >= 2 && !t->byte_level && t->kind[id] == TOKDEF_BYTE) return TYPE_BYTE;
    return TYPE_NORMAL;
}

/* The patterns a version 2 byte-level pre-tokenizer applies, in llama.cpp's spelling;
 * -1 when a step has none. */
static int patterns_of(const tokenizer *t, const char **out, int max, int *n) {
    const char *const *gpt2;
    tok_gguf_pre_name(0, &gpt2);
    *n = 0;
    for (int i = 0; i < t->n_steps[TOK_STAGE_PRETOKENIZER]; i++) {
        const tok_step *st = &t->steps[TOK_STAGE_PRETOKENIZER][i];
        const char *p = NULL;
        if (st->kind == STEP_SPLIT && st->regex_source && st->behaviour == SPLIT_ISOLATED && !st->invert) p = st->a;
        else if (st->kind == STEP_DIGITS && st->individual) p = "\\p{N}";
        else if (st->kind == STEP_BYTELEVEL && !st->prefix_space) p = st->use_regex ? gpt2[0] : "";
        if (!p || *n == max) return -1;
        if (*p) out[(*n)++] = p;
    }
    return 0;
}

/* Two patterns alike, HF's (?i:'s|...) being llama.cpp's (?:'[sS]|...). */
static int same_pattern(const char *hf, const char *cpp) {
    static const char a[] = "(?i:'s|'t|'re|'ve|'m|'ll|'d)", b[] = "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])";
    if (!strncmp(hf, a, strlen(a)) && !strncmp(cpp, b, strlen(b))) return !strcmp(hf + strlen(a), cpp + strlen(b));
    return !strcmp(hf, cpp);
}

/* llama.cpp's name of a byte-level tokenizer's pre-tokenizer, or NULL. */
static const char *pre_name(const tokenizer *t) {
    const char *have[4];
    int n;
    if (patterns_of(t, have, 4, &n)) return NULL;
    for (int k = 0;; k++) {
        const char *const *want;
        const char *name = tok_gguf_pre_name(k, &want);
        if (!name) return NULL;
        int m = 0;
        while (m < 2 && want[m]) m++;
        int same = m == n;
        for (int i = 0; same && i < n; i++) same = same_pattern(have[i], want[i]);
        if (same) return name;
    }
}

/* The normalizer is one GGUF spells: none or NFC (byte-level), Prepend "▁" and Replace
 * " " -> "▁" (SentencePiece). *prefix: it prepends. */
static int normalizer_ok(const tokenizer *t, int *prefix) {
    *prefix = 0;
    for (int i = 0; i < t->n_steps[TOK_STAGE_NORMALIZER]; i++) {
        const tok_step *st = &t->steps[TOK_STAGE_NORMALIZER][i];
        if (t->byte_level ? st->kind != STEP_NFC
                          : !((st->kind == STEP_PREPEND && st->a_len == 3 && !memcmp(st->a, "\xE2\x96\x81", 3)) ||
                              (st->kind == STEP_REPLACE && !st->regex_source && st->a_len == 1 && st->a[0] == ' ' &&
                               st->b_len == 3 && !memcmp(st->b, "\xE2\x96\x81", 3))))
            return 0;
        if (st->kind == STEP_PREPEND) *prefix = 1;
    }
    return t->byte_level || t->n_steps[TOK_STAGE_PRETOKENIZER] == 0;
}

/* Scores that order SentencePiece's merges as the ranks do. */
static float *sentencepiece_scores(const tokenizer *t) {
    float *scores = malloc((size_t)t->n_vocab * sizeof *scores);
    if (!scores) return NULL;
    for (int32_t id = 0; id < t->n_vocab; id++) { /* text no merge makes comes last; characters do not merge */
        size_t n = t->length[id], chars = 0;
        for (size_t i = 0; i < n; i++) chars += (t->blob[t->offset[id] + i] & 0xC0) != 0x80;
        scores[id] = t->kind[id] == TOKDEF_TOKEN && chars > 1 ? -1e9f : 0.0f;
    }
    for (int32_t r = t->n_merges - 1; r >= 0; r--) scores[t->merges[r].result] = -(float)(r + 1);
    return scores;
}

static void write_ids(const tokenizer *t, gguf_writer *w) {
    static const struct { const char *key; int role; } keys[] = {
        {"tokenizer.ggml.bos_token_id", TOK_BOS},        {"tokenizer.ggml.eos_token_id", TOK_EOS},
        {"tokenizer.ggml.padding_token_id", TOK_PAD},    {"tokenizer.ggml.unknown_token_id", TOKROLE_UNK},
        {"tokenizer.ggml.seperator_token_id", TOK_SEP},  {"tokenizer.ggml.cls_token_id", TOK_CLS},
        {"tokenizer.ggml.mask_token_id", TOK_MASK}};
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
        if (t->role_id[keys[k].role] >= 0) gguf_writer_u32(w, keys[k].key, (uint32_t)t->role_id[keys[k].role]);
    for (int32_t i = 0; i < t->n_specials; i++)
        if (t->specials[i].roles >> TOKROLE_EOG & 1) {
            gguf_writer_u32(w, "tokenizer.ggml.eot_token_id", (uint32_t)t->specials[i].id);
            break;
        }
}

/* The token texts, types and merges ("A B" of the texts), malloc'd into *texts, *pairs. */
static int texts_and_merges(const tokenizer *t, char ***texts, int32_t **types, char ***pairs) {
    *texts = calloc((size_t)t->n_vocab, sizeof **texts);
    *types = malloc((size_t)t->n_vocab * sizeof **types);
    *pairs = calloc((size_t)(t->n_merges ? t->n_merges : 1), sizeof **pairs);
    if (!*texts || !*types || !*pairs) return -1;
    for (int32_t id = 0; id < t->n_vocab; id++) {
        if (!((*texts)[id] = token_text(t, id))) return -1;
        (*types)[id] = token_type(t, id);
    }
    for (int32_t r = 0; r < t->n_merges; r++) {
        const char *a = (*texts)[t->merges[r].left], *b = (*texts)[t->merges[r].right];
        size_t len = strlen(a) + strlen(b) + 2;
        if (!((*pairs)[r] = malloc(len))) return -1;
        snprintf((*pairs)[r], len, "%s %s", a, b);
    }
    return 0;
}

static void free_texts(char **texts, int32_t n, int32_t *types, char **pairs, int32_t n_pairs) {
    for (int32_t i = 0; texts && i < n; i++) free(texts[i]);
    for (int32_t i = 0; pairs && i < n_pairs; i++) free(pairs[i]);
    free(texts);
    free(types);
    free(pairs);
}

int tokenizer_to_gguf(const tokenizer *t, gguf_writer *w, char *err, size_t errlen) {
    const char *pre = t->version < 2 ? "gpt-2" : t->byte_level ? pre_name(t) : NULL;
    int prefix = 0;
    if (t->version >= 2 && ((t->byte_level && !pre) || !normalizer_ok(t, &prefix))) {
        error_printf(err, errlen, "the tokenizer's %s has no llama.cpp name (GGUF spells the pre-tokenizers gpt-2, "
                                  "llama-bpe, qwen2 and smollm, and SentencePiece's normalizer)",
                     t->byte_level && !pre ? "pre-tokenizer" : "normalizer");
        return -1;
    }
    char **texts = NULL, **pairs = NULL;
    int32_t *types = NULL;
    float *scores = t->version >= 2 && !t->byte_level ? sentencepiece_scores(t) : NULL;
    int rc = texts_and_merges(t, &texts, &types, &pairs);
    if (rc || (t->version >= 2 && !t->byte_level && !scores)) {
        free_texts(texts, t->n_vocab, types, pairs, t->n_merges);
        free(scores);
        error_printf(err, errlen, "out of memory for the tokenizer");
        return -1;
    }
    gguf_writer_str(w, "tokenizer.ggml.model", pre ? "gpt2" : "llama");
    if (pre) gguf_writer_str(w, "tokenizer.ggml.pre", pre);
    gguf_writer_str_array(w, "tokenizer.ggml.tokens", (const char *const *)texts, (size_t)t->n_vocab);
    if (scores) gguf_writer_f32_array(w, "tokenizer.ggml.scores", scores, (size_t)t->n_vocab);
    gguf_writer_i32_array(w, "tokenizer.ggml.token_type", types, (size_t)t->n_vocab);
    gguf_writer_str_array(w, "tokenizer.ggml.merges", (const char *const *)pairs, (size_t)t->n_merges);
    if (t->version < 2) { /* as kiln wrote them before: a byte-level model's end token is the NUL byte */
        int32_t bos = t->role_id[TOK_BOS], eos = t->role_id[TOK_EOS];
        gguf_writer_u32(w, "tokenizer.ggml.bos_token_id", (uint32_t)(bos >= 0 ? bos : 0));
        gguf_writer_u32(w, "tokenizer.ggml.eos_token_id", (uint32_t)(eos >= 0 ? eos : 0));
        gguf_writer_bool(w, "tokenizer.ggml.add_bos_token", 0);
    } else {
        write_ids(t, w);
        gguf_writer_bool(w, "tokenizer.ggml.add_bos_token", t->add_bos);
        gguf_writer_bool(w, "tokenizer.ggml.add_eos_token", t->add_eos);
        if (!t->byte_level) gguf_writer_bool(w, "tokenizer.ggml.add_space_prefix", prefix);
    }
    free_texts(texts, t->n_vocab, types, pairs, t->n_merges);
    free(scores);
    return 0;
}
