/* Version 2 of the tokenizer file: its strings (escaped so that a field never holds a
 * space), its option records and the records of the pipeline's steps (docs/tokenizers.md):
 *     option byte_level|byte_fallback|ignore_merges|add_bos|add_eos
 *     normalize nfc | prepend S | replace string|regex S S
 *     pretokenize split string|regex S isolated|removed|merged_previous|merged_next|contiguous invert|-
 *                 bytelevel prefix|- regex|- | digits individual|runs | metaspace S always|first|never split|-
 *     decode bytelevel | bytefallback | fuse | strip S START STOP | replace string|regex S S */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/error_printf.h"
#include "text/tokenizer_internal.h"

static const char *const stage_names[TOK_STAGES] = {"normalize", "pretokenize", "decode"};
static const char *const kind_names[] = {"nfc", "prepend", "replace", "split", "bytelevel",
                                         "digits", "metaspace", "bytefallback", "fuse", "strip"};
static const char *const behaviour_names[] = {"isolated", "removed", "merged_previous", "merged_next", "contiguous"};
static const char *const scheme_names[] = {"always", "first", "never"};
static const char *const option_names[] = {"byte_level", "byte_fallback", "ignore_merges", "add_bos", "add_eos"};
enum { N_KINDS = sizeof kind_names / sizeof kind_names[0] };

/* Which kinds each stage may hold. */
static int kind_allowed(int stage, tok_step_kind k) {
    if (stage == TOK_STAGE_NORMALIZER) return k == STEP_NFC || k == STEP_PREPEND || k == STEP_REPLACE;
    if (stage == TOK_STAGE_PRETOKENIZER) return k == STEP_SPLIT || k == STEP_BYTELEVEL || k == STEP_DIGITS || k == STEP_METASPACE;
    return k == STEP_BYTELEVEL || k == STEP_BYTEFALLBACK || k == STEP_FUSE || k == STEP_STRIP || k == STEP_REPLACE;
}

static int escaped(uint8_t c) { return c <= ' ' || c == '%' || c >= 0x7F; }

int tok_escape(tok_buf *out, const void *s, size_t n) {
    static const char hex[] = "0123456789ABCDEF";
    const uint8_t *b = s;
    if (n == 0) return tok_buf_put(out, "%", 1); /* a lone % is the empty string */
    for (size_t i = 0; i < n; i++) {
        char e[3] = {'%', hex[b[i] >> 4], hex[b[i] & 15]};
        tok_buf_put(out, escaped(b[i]) ? e : (const char *)b + i, escaped(b[i]) ? 3 : 1);
    }
    return out->failed ? -1 : 0;
}

static int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

int tok_unescape(const char *f, size_t n, tok_buf *out) {
    out->len = 0;
    if (n == 1 && f[0] == '%') return tok_buf_put(out, NULL, 0);
    for (size_t i = 0; i < n; i++) {
        uint8_t c = (uint8_t)f[i];
        if (c == '%') {
            int hi = i + 2 < n ? hex_digit(f[i + 1]) : -1, lo = i + 2 < n ? hex_digit(f[i + 2]) : -1;
            if (hi < 0 || lo < 0 || !escaped((uint8_t)(hi * 16 + lo))) return -1; /* one spelling per string */
            c = (uint8_t)(hi * 16 + lo);
            i += 2;
        } else if (escaped(c)) {
            return -1;
        }
        if (tok_buf_put(out, &c, 1)) return -1;
    }
    return tok_buf_put(out, NULL, 0);
}

static int word_index(const char *const *names, int count, const char *f, size_t n) {
    for (int k = 0; k < count; k++)
        if (strlen(names[k]) == n && !memcmp(names[k], f, n)) return k;
    return -1;
}

int tok_parse_option(tokenizer *t, const char *f, size_t n) {
    int *flags[] = {&t->byte_level, &t->byte_fallback, &t->ignore_merges, &t->add_bos, &t->add_eos};
    int k = word_index(option_names, 5, f, n);
    if (k < 0 || *flags[k]) return -1;
    *flags[k] = 1;
    return 0;
}

/* A string field into a malloc'd copy. */
static int string_field(const char *f, size_t n, char **s, size_t *len) {
    tok_buf b = {0};
    if (tok_unescape(f, n, &b)) {
        free(b.p);
        return -1;
    }
    *s = (char *)b.p;
    *len = b.len;
    return 0;
}

static int number_field(const char *f, size_t n, int *v) {
    if (n == 0 || n > 4) return -1;
    *v = 0;
    for (size_t i = 0; i < n; i++) {
        if (f[i] < '0' || f[i] > '9') return -1;
        *v = *v * 10 + (f[i] - '0');
    }
    return 0;
}

/* The fields after the kind, by kind; 0 when they are what the kind takes. */
static int step_fields(tok_step *st, const char **f, const size_t *fl, int nf) {
    int src;
    switch (st->kind) {
    case STEP_PREPEND: return nf == 1 ? string_field(f[0], fl[0], &st->a, &st->a_len) : -1;
    case STEP_REPLACE:
        if (nf != 3 || (src = word_index((const char *const[]){"string", "regex"}, 2, f[0], fl[0])) < 0) return -1;
        st->regex_source = src;
        return string_field(f[1], fl[1], &st->a, &st->a_len) || string_field(f[2], fl[2], &st->b, &st->b_len) ? -1 : 0;
    case STEP_SPLIT:
        if (nf != 4 || (src = word_index((const char *const[]){"string", "regex"}, 2, f[0], fl[0])) < 0) return -1;
        st->regex_source = src;
        st->behaviour = (tok_split_behaviour)word_index(behaviour_names, 5, f[2], fl[2]);
        st->invert = word_index((const char *const[]){"-", "invert"}, 2, f[3], fl[3]);
        return (int)st->behaviour < 0 || st->invert < 0 ? -1 : string_field(f[1], fl[1], &st->a, &st->a_len);
    case STEP_BYTELEVEL:
        if (nf == 0) return 0; /* the decoder */
        if (nf != 2) return -1;
        st->prefix_space = word_index((const char *const[]){"-", "prefix"}, 2, f[0], fl[0]);
        st->use_regex = word_index((const char *const[]){"-", "regex"}, 2, f[1], fl[1]);
        return st->prefix_space < 0 || st->use_regex < 0 ? -1 : 0;
    case STEP_DIGITS:
        if (nf != 1) return -1;
        st->individual = word_index((const char *const[]){"runs", "individual"}, 2, f[0], fl[0]);
        return st->individual < 0 ? -1 : 0;
    case STEP_METASPACE:
        if (nf != 3) return -1;
        st->prepend = (tok_prepend_scheme)word_index(scheme_names, 3, f[1], fl[1]);
        st->split = word_index((const char *const[]){"-", "split"}, 2, f[2], fl[2]);
        return (int)st->prepend < 0 || st->split < 0 ? -1 : string_field(f[0], fl[0], &st->a, &st->a_len);
    case STEP_STRIP:
        return nf == 3 && !number_field(f[1], fl[1], &st->start) && !number_field(f[2], fl[2], &st->stop)
                   ? string_field(f[0], fl[0], &st->a, &st->a_len)
                   : -1;
    default: return nf == 0 ? 0 : -1;
    }
}

int tok_parse_step(tokenizer *t, const char *stage_word, size_t stage_len, const char **f, const size_t *fl, int nf,
                   char *err, size_t errlen) {
    int stage = word_index(stage_names, TOK_STAGES, stage_word, stage_len);
    int kind = nf > 0 ? word_index(kind_names, N_KINDS, f[0], fl[0]) : -1;
    tok_step st = {.kind = (tok_step_kind)kind};
    if (kind < 0 || !kind_allowed(stage, st.kind)) {
        error_printf(err, errlen, "unknown %s step", stage_names[stage]);
        return -1;
    }
    if (step_fields(&st, f + 1, fl + 1, nf - 1)) {
        tok_step_clear(&st);
        error_printf(err, errlen, "a malformed %s %s record", stage_names[stage], kind_names[kind]);
        return -1;
    }
    return tok_add_step(t, stage, &st, err, errlen);
}

int tok_is_step_record(const char *f, size_t n) { return word_index(stage_names, TOK_STAGES, f, n) >= 0; }

static void put_word(tok_buf *out, const char *w) {
    tok_buf_put(out, " ", 1);
    tok_buf_put(out, w, strlen(w));
}

static void put_string(tok_buf *out, const char *s, size_t n) {
    tok_buf_put(out, " ", 1);
    tok_escape(out, s, n);
}

static void put_step(tok_buf *out, int stage, const tok_step *st) {
    char num[32];
    tok_buf_put(out, stage_names[stage], strlen(stage_names[stage]));
    put_word(out, kind_names[st->kind]);
    switch (st->kind) {
    case STEP_PREPEND: put_string(out, st->a, st->a_len); break;
    case STEP_REPLACE:
        put_word(out, st->regex_source ? "regex" : "string");
        put_string(out, st->a, st->a_len);
        put_string(out, st->b, st->b_len);
        break;
    case STEP_SPLIT:
        put_word(out, st->regex_source ? "regex" : "string");
        put_string(out, st->a, st->a_len);
        put_word(out, behaviour_names[st->behaviour]);
        put_word(out, st->invert ? "invert" : "-");
        break;
    case STEP_BYTELEVEL:
        if (stage == TOK_STAGE_PRETOKENIZER) {
            put_word(out, st->prefix_space ? "prefix" : "-");
            put_word(out, st->use_regex ? "regex" : "-");
        }
        break;
    case STEP_DIGITS: put_word(out, st->individual ? "individual" : "runs"); break;
    case STEP_METASPACE:
        put_string(out, st->a, st->a_len);
        put_word(out, scheme_names[st->prepend]);
        put_word(out, st->split ? "split" : "-");
        break;
    case STEP_STRIP:
        put_string(out, st->a, st->a_len);
        snprintf(num, sizeof num, " %d %d", st->start, st->stop);
        tok_buf_put(out, num, strlen(num));
        break;
    default: break;
    }
    tok_buf_put(out, "\n", 1);
}

int tok_serialize_steps(const tokenizer *t, tok_buf *out) {
    const int flags[] = {t->byte_level, t->byte_fallback, t->ignore_merges, t->add_bos, t->add_eos};
    for (int k = 0; k < 5; k++)
        if (flags[k]) {
            tok_buf_put(out, "option", 6);
            put_word(out, option_names[k]);
            tok_buf_put(out, "\n", 1);
        }
    for (int stage = 0; stage < TOK_STAGES; stage++)
        for (int i = 0; i < t->n_steps[stage]; i++) put_step(out, stage, &t->steps[stage][i]);
    return out->failed ? -1 : 0;
}
