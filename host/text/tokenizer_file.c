/* The tokenizer file format (text/tokenizer.h): parsing with one-line errors that name the
 * line, serialization, and the file's load and atomic save. */
#define _POSIX_C_SOURCE 200809L
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "formats/error_printf.h"
#include "formats/file_open.h"
#include "kiln/file.h"
#include "text/tokenizer_internal.h"

/* Files larger than this are refused: GPT-2's is about 1 MB. */
#define TOKENIZER_MAX_FILE ((size_t)256 << 20)

/* One line being parsed: its fields are read left to right. */
typedef struct line_cursor {
    const char *p, *end;
} line_cursor;

/* The next space-separated field (exactly one space between fields; a line never ends in a
 * space), or 0 at the end. */
static int next_field(line_cursor *c, const char **field, size_t *len) {
    if (c->p >= c->end) return 0;
    const char *sp = memchr(c->p, ' ', (size_t)(c->end - c->p));
    const char *stop = sp ? sp : c->end;
    *field = c->p;
    *len = (size_t)(stop - c->p);
    c->p = sp ? sp + 1 : c->end;
    return *len > 0 || sp; /* an empty field (two spaces) is still a field: it fails as a number */
}

/* A decimal id in [0, limit), no sign, no leading zeros. */
static int parse_id(const char *s, size_t len, int64_t limit, int32_t *out) {
    if (len == 0 || len > 10 || (len > 1 && s[0] == '0')) return -1;
    int64_t v = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9') return -1;
        v = v * 10 + (s[i] - '0');
    }
    if (v >= limit) return -1;
    *out = (int32_t)v;
    return 0;
}

static int field_is(const char *f, size_t len, const char *word) {
    return strlen(word) == len && !memcmp(f, word, len);
}

/* The state of one parse: where it is (for the messages) and what it has built so far. */
typedef struct tok_parser {
    const char *name;
    char *err;
    size_t errlen;
    long lineno;
    int state; /* the record expected next (EXPECT_...) */
    tokenizer *t;
    int32_t n_vocab;
    int saw_merge;
    int version;     /* of the file, from its first line */
    int saw_defined; /* version 2: a special or token record (the steps come before them) */
    tok_buf scratch; /* version 2: an unescaped string */
} tok_parser;

/* err = "NAME:LINE: " + message, for the line being parsed; returns -1. */
static int line_error(const tok_parser *ps, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int line_error(const tok_parser *ps, const char *fmt, ...) {
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    error_printf(ps->err, ps->errlen, "%s:%ld: %s", ps->name, ps->lineno, msg);
    return -1;
}

/* The records in the order they must come. */
enum { EXPECT_MAGIC, EXPECT_VOCAB, EXPECT_PRETOK, EXPECT_BYTES, EXPECT_BODY };

/* Each record's reader gets the line after its first field f (fl bytes); 0 or -1 with err. */

static int parse_magic(tok_parser *ps, line_cursor *c, const char *f, size_t fl) {
    (void)fl; /* the magic line holds spaces: it is compared whole */
    size_t len = (size_t)(c->end - f);
    if (len == strlen(TOKENIZER_MAGIC) && !memcmp(f, TOKENIZER_MAGIC, len)) ps->version = 1;
    else if (len == strlen(TOKENIZER_MAGIC_V2) && !memcmp(f, TOKENIZER_MAGIC_V2, len)) ps->version = 2;
    else
        return line_error(ps, "not a kiln tokenizer (the first line must be \"%s\" or \"%s\")", TOKENIZER_MAGIC,
                          TOKENIZER_MAGIC_V2);
    return 0;
}

/* "vocab N" */
static int parse_vocab(tok_parser *ps, line_cursor *c, const char *f, size_t fl) {
    const char *v;
    size_t vl;
    int32_t nv;
    if (!field_is(f, fl, "vocab") || !next_field(c, &v, &vl) ||
        parse_id(v, vl, (int64_t)TOKENIZER_MAX_VOCAB + 1, &nv) || nv < 256 || c->p < c->end)
        return line_error(ps, "expected \"vocab N\" with 256 <= N <= %d", TOKENIZER_MAX_VOCAB);
    ps->n_vocab = nv;
    return 0;
}

/* "pretokenizer gpt2|none" (version 2: "pretokenizer steps"): the tokenizer is made here,
 * now that its size is known. */
static int parse_pretok(tok_parser *ps, line_cursor *c, const char *f, size_t fl) {
    const char *v;
    size_t vl;
    if (ps->version >= 2) {
        if (!field_is(f, fl, "pretokenizer") || !next_field(c, &v, &vl) || c->p < c->end || !field_is(v, vl, "steps"))
            return line_error(ps, "expected \"pretokenizer steps\"");
    } else if (!field_is(f, fl, "pretokenizer") || !next_field(c, &v, &vl) || c->p < c->end ||
               !(field_is(v, vl, "gpt2") || field_is(v, vl, "none"))) {
        return line_error(ps, "expected \"pretokenizer gpt2\" or \"pretokenizer none\"");
    }
    ps->t = tok_new(ps->n_vocab, ps->version >= 2 ? PRETOK_STEPS : field_is(v, vl, "gpt2") ? PRETOK_GPT2 : PRETOK_NONE);
    if (!ps->t) return line_error(ps, "out of memory");
    ps->t->version = ps->version;
    return 0;
}

/* "bytes ID0 ... ID255" */
static int parse_bytes(tok_parser *ps, line_cursor *c, const char *f, size_t fl) {
    int32_t ids[256];
    int b = 0;
    const char *v;
    size_t vl;
    char msg[200];
    if (!field_is(f, fl, "bytes")) return line_error(ps, "expected \"bytes\" and the 256 byte ids");
    while (b < 256 && next_field(c, &v, &vl) && !parse_id(v, vl, ps->n_vocab, &ids[b])) b++;
    if (b < 256 || c->p < c->end)
        return line_error(ps, "expected \"bytes\" and 256 ids below %ld", (long)ps->n_vocab);
    if (tok_set_bytes(ps->t, ids, msg, sizeof msg)) return line_error(ps, "%s", msg);
    return 0;
}

/* "merge LEFT RIGHT ID" */
static int parse_merge(tok_parser *ps, line_cursor *c) {
    const char *v[3];
    size_t vl[3];
    int32_t id[3];
    int k = 0;
    char msg[200];
    while (k < 3 && next_field(c, &v[k], &vl[k]) && !parse_id(v[k], vl[k], ps->n_vocab, &id[k])) k++;
    if (k < 3 || c->p < c->end)
        return line_error(ps, "expected \"merge LEFT RIGHT ID\" with ids below %ld", (long)ps->n_vocab);
    ps->saw_merge = 1;
    if (tok_add_merge(ps->t, id[0], id[1], id[2], msg, sizeof msg)) return line_error(ps, "%s", msg);
    return 0;
}

/* A special token's ROLES field: "-", or a comma list of role names without repeats. */
static int parse_roles(tok_parser *ps, const char *s, size_t len, unsigned *roles) {
    *roles = 0;
    if (field_is(s, len, "-")) return 0;
    line_cursor list = {s, s + len};
    while (list.p < list.end) {
        const char *comma = memchr(list.p, ',', (size_t)(list.end - list.p));
        const char *stop = comma ? comma : list.end;
        int k = 0, count = ps->version >= 2 ? TOKROLE_COUNT : TOK_SPECIAL_COUNT;
        while (k < count && !field_is(list.p, (size_t)(stop - list.p), tokenizer_role_names[k])) k++;
        if (k == count || (*roles >> k & 1))
            return line_error(ps, "ROLES must be \"-\" or a comma list of pad, bos, eos, cls, sep, mask%s",
                              ps->version >= 2 ? ", unk, eog" : "");
        *roles |= 1u << k;
        list.p = comma ? comma + 1 : list.end;
        if (comma && list.p == list.end) return line_error(ps, "ROLES ends with a comma");
    }
    return 0;
}

/* The n fields of a line "KIND ID ..." (form: its usage, what: its plural in the error) that
   defines a token: exactly n, an id in the vocabulary, and no merge seen yet. */
static int token_fields(tok_parser *ps, line_cursor *c, int n, const char **v, size_t *vl, int32_t *id,
                        const char *form, const char *what) {
    int k = 0;
    while (k < n && next_field(c, &v[k], &vl[k])) k++;
    if (k < n || c->p < c->end || parse_id(v[0], vl[0], ps->n_vocab, id))
        return line_error(ps, "expected \"%s\" with an id below %ld", form, (long)ps->n_vocab);
    if (ps->saw_merge) return line_error(ps, "%s come before the merges", what);
    return 0;
}

/* "special ID NAME ROLES", before any merge */
static int parse_special(tok_parser *ps, line_cursor *c) {
    const char *v[3] = {0};
    size_t vl[3] = {0};
    int32_t id = 0;
    unsigned roles;
    char msg[200];
    if (token_fields(ps, c, 3, v, vl, &id, "special ID NAME ROLES", "special tokens")) return -1;
    if (parse_roles(ps, v[2], vl[2], &roles)) return -1;
    const char *name = v[1];
    size_t name_len = vl[1];
    if (ps->version >= 2) {
        if (tok_unescape(v[1], vl[1], &ps->scratch)) return line_error(ps, "a malformed escaped string");
        name = (const char *)ps->scratch.p, name_len = ps->scratch.len;
        ps->saw_defined = 1;
    }
    if (tok_add_special(ps->t, id, name, name_len, roles, msg, sizeof msg)) return line_error(ps, "%s", msg);
    return 0;
}

/* Version 2: "token ID BYTES", before any merge */
static int parse_token(tok_parser *ps, line_cursor *c) {
    const char *v[2] = {0};
    size_t vl[2] = {0};
    int32_t id = 0;
    char msg[200];
    if (token_fields(ps, c, 2, v, vl, &id, "token ID BYTES", "tokens")) return -1;
    if (tok_unescape(v[1], vl[1], &ps->scratch)) return line_error(ps, "a malformed escaped string");
    ps->saw_defined = 1;
    if (tok_add_token(ps->t, id, ps->scratch.p, ps->scratch.len, msg, sizeof msg)) return line_error(ps, "%s", msg);
    return 0;
}

/* Version 2: "option NAME" and the steps' records, before the tokens. */
static int parse_v2_record(tok_parser *ps, line_cursor *c, const char *f, size_t fl) {
    const char *v[8];
    size_t vl[8];
    int k = 0;
    char msg[200];
    while (k < 8 && next_field(c, &v[k], &vl[k])) k++;
    if (c->p < c->end) return line_error(ps, "too many fields");
    if (ps->saw_defined || ps->saw_merge) return line_error(ps, "options and steps come before the tokens");
    if (field_is(f, fl, "option"))
        return k == 1 && !tok_parse_option(ps->t, v[0], vl[0]) ? 0 : line_error(ps, "an unknown or repeated option");
    if (tok_parse_step(ps->t, f, fl, v, vl, k, msg, sizeof msg)) return line_error(ps, "%s", msg);
    return 0;
}

/* One line: the header record expected next, or a body record. */
static int parse_line(tok_parser *ps, line_cursor *c) {
    static int (*const header[EXPECT_BODY])(tok_parser *, line_cursor *, const char *, size_t) = {
        parse_magic, parse_vocab, parse_pretok, parse_bytes};
    const char *f;
    size_t fl;
    if (c->end > c->p && c->end[-1] == ' ') /* fields are separated by exactly one space */
        return line_error(ps, "a space at the end of the line");
    if (!next_field(c, &f, &fl)) return line_error(ps, "an empty line");
    if (ps->state < EXPECT_BODY) {
        if (header[ps->state](ps, c, f, fl)) return -1;
        ps->state++;
        return 0;
    }
    if (field_is(f, fl, "merge")) return parse_merge(ps, c);
    if (field_is(f, fl, "special")) return parse_special(ps, c);
    if (ps->version >= 2 && field_is(f, fl, "token")) return parse_token(ps, c);
    if (ps->version >= 2 && (field_is(f, fl, "option") || tok_is_step_record(f, fl))) return parse_v2_record(ps, c, f, fl);
    return line_error(ps, "unknown record \"%.*s\" (expected merge or special%s)", (int)(fl > 40 ? 40 : fl), f,
                      ps->version >= 2 ? ", token, option or a step" : "");
}

int tokenizer_parse(const char *text, size_t n, const char *name, tokenizer **out, char *err, size_t errlen) {
    *out = NULL;
    tok_parser ps = {.name = name, .err = err, .errlen = errlen, .state = EXPECT_MAGIC};
    int rc = 0;
    char msg[200];
    for (const char *p = text, *end = text + n; p < end && !rc;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        line_cursor c = {p, nl ? nl : end};
        if (c.end > c.p && c.end[-1] == '\r') c.end--;
        p = nl ? nl + 1 : end;
        ps.lineno++;
        rc = parse_line(&ps, &c);
    }
    if (!rc && ps.state != EXPECT_BODY) {
        static const char *const wanted[] = {"the line \"" TOKENIZER_MAGIC "\"", "the \"vocab\" line",
                                             "the \"pretokenizer\" line", "the \"bytes\" line"};
        ps.lineno++; /* the line that is missing */
        rc = line_error(&ps, "the file ends before %s", wanted[ps.state]);
    }
    if (!rc && tok_finish(ps.t, msg, sizeof msg)) rc = line_error(&ps, "%s", msg);
    free(ps.scratch.p);
    if (rc) {
        tokenizer_free(ps.t);
        return -1;
    }
    *out = ps.t;
    return 0;
}

/* A growing text buffer; `failed` sticks after the first allocation failure. */
typedef struct text_buf {
    char *s;
    size_t len, cap;
    int failed;
} text_buf;

static void buf_printf(text_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void buf_printf(text_buf *b, const char *fmt, ...) {
    if (b->failed) return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int need = vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
        va_end(ap);
        if (need < 0) {
            b->failed = 1;
            return;
        }
        if ((size_t)need < b->cap - b->len) {
            b->len += (size_t)need;
            return;
        }
        size_t cap = b->cap * 2 + (size_t)need + 1;
        char *grown = realloc(b->s, cap);
        if (!grown) {
            b->failed = 1;
            return;
        }
        b->s = grown, b->cap = cap;
    }
}

/* Version 2: the header, the steps, the specials and tokens with their bytes escaped, the
 * merges. */
static char *serialize_v2(const tokenizer *t, size_t *n) {
    tok_buf b = {0};
    char line[96];
    snprintf(line, sizeof line, "%s\nvocab %ld\npretokenizer steps\nbytes", TOKENIZER_MAGIC_V2, (long)t->n_vocab);
    tok_buf_put(&b, line, strlen(line));
    for (int i = 0; i < 256; i++) tok_buf_put(&b, line, (size_t)snprintf(line, sizeof line, " %ld", (long)t->byte_id[i]));
    tok_buf_put(&b, "\n", 1);
    tok_serialize_steps(t, &b);
    for (int32_t i = 0; i < t->n_specials; i++) {
        const tokenizer_special_entry *s = &t->specials[i];
        tok_buf_put(&b, line, (size_t)snprintf(line, sizeof line, "special %ld ", (long)s->id));
        tok_escape(&b, t->blob + t->offset[s->id], t->length[s->id]);
        int any = 0;
        for (int k = 0; k < TOKROLE_COUNT; k++)
            if (s->roles >> k & 1) {
                tok_buf_put(&b, any++ ? "," : " ", 1);
                tok_buf_put(&b, tokenizer_role_names[k], strlen(tokenizer_role_names[k]));
            }
        tok_buf_put(&b, any ? "\n" : " -\n", any ? 1 : 3);
    }
    for (int32_t id = 0; id < t->n_vocab; id++) {
        if (t->kind[id] != TOKDEF_TOKEN) continue;
        tok_buf_put(&b, line, (size_t)snprintf(line, sizeof line, "token %ld ", (long)id));
        tok_escape(&b, t->blob + t->offset[id], t->length[id]);
        tok_buf_put(&b, "\n", 1);
    }
    for (int32_t i = 0; i < t->n_merges; i++)
        tok_buf_put(&b, line, (size_t)snprintf(line, sizeof line, "merge %ld %ld %ld\n", (long)t->merges[i].left,
                                               (long)t->merges[i].right, (long)t->merges[i].result));
    if (tok_buf_put(&b, NULL, 0)) {
        free(b.p);
        return NULL;
    }
    b.p[b.len] = 0;
    *n = b.len;
    return (char *)b.p;
}

char *tokenizer_serialize(const tokenizer *t, size_t *n) {
    if (t->version >= 2) return serialize_v2(t, n);
    text_buf b = {.s = malloc(65536), .cap = 65536};
    if (!b.s) return NULL;
    buf_printf(&b, "%s\nvocab %ld\npretokenizer %s\nbytes", TOKENIZER_MAGIC, (long)t->n_vocab,
               t->pretok == PRETOK_GPT2 ? "gpt2" : "none");
    for (int i = 0; i < 256; i++) buf_printf(&b, " %ld", (long)t->byte_id[i]);
    buf_printf(&b, "\n");
    for (int32_t i = 0; i < t->n_specials; i++) {
        const tokenizer_special_entry *s = &t->specials[i];
        buf_printf(&b, "special %ld %.*s ", (long)s->id, (int)t->length[s->id], (const char *)t->blob + t->offset[s->id]);
        int any = 0;
        for (int k = 0; k < TOK_SPECIAL_COUNT; k++)
            if (s->roles >> k & 1) buf_printf(&b, "%s%s", any++ ? "," : "", tokenizer_role_names[k]);
        buf_printf(&b, "%s\n", any ? "" : "-");
    }
    for (int32_t i = 0; i < t->n_merges; i++)
        buf_printf(&b, "merge %ld %ld %ld\n", (long)t->merges[i].left, (long)t->merges[i].right,
                   (long)t->merges[i].result);
    if (b.failed) {
        free(b.s);
        return NULL;
    }
    *n = b.len;
    return b.s;
}

int tokenizer_load(const char *path, tokenizer **out, char *err, size_t errlen) {
    *out = NULL;
    struct stat st;
    FILE *f = file_open_read(path, "the tokenizer", &st, err, errlen);
    if (!f) return -1;
    if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size > TOKENIZER_MAX_FILE) {
        fclose(f);
        error_printf(err, errlen, "%s: %s", path,
                     S_ISREG(st.st_mode) ? "larger than any tokenizer (256 MiB)" : "not a regular file");
        return -1;
    }
    size_t size = (size_t)st.st_size;
    char *text = malloc(size ? size : 1);
    if (!text) {
        fclose(f);
        error_printf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    size_t got = fread(text, 1, size, f);
    int read_failed = ferror(f);
    fclose(f);
    if (got != size || read_failed) {
        free(text);
        error_printf(err, errlen, "%s: cannot read the tokenizer", path);
        return -1;
    }
    int rc = tokenizer_parse(text, size, path, out, err, errlen);
    free(text);
    return rc;
}

int tokenizer_save(const tokenizer *t, const char *path, char *err, size_t errlen) {
    size_t n;
    char *text = tokenizer_serialize(t, &n);
    if (!text) {
        error_printf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    kiln_status st = kiln_file_write_all(path, text, n, err, errlen);
    free(text);
    return st == KILN_OK ? 0 : -1;
}
