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

/* err = "NAME:LINE: " + message */
static int line_error(char *err, size_t errlen, const char *name, long line, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static int line_error(char *err, size_t errlen, const char *name, long line, const char *fmt, ...) {
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    error_printf(err, errlen, "%s:%ld: %s", name, line, msg);
    return -1;
}

/* The records in the order they must come. */
enum { EXPECT_MAGIC, EXPECT_VOCAB, EXPECT_PRETOK, EXPECT_BYTES, EXPECT_BODY };

int tokenizer_parse(const char *text, size_t n, const char *name, tokenizer **out, char *err, size_t errlen) {
    *out = NULL;
    tokenizer *t = NULL;
    int32_t n_vocab = 0;
    tokenizer_pretok pretok = PRETOK_NONE;
    int state = EXPECT_MAGIC, rc = 0, saw_merge = 0;
    long lineno = 0;
    char msg[200];
    const char *p = text, *end = text + n;
    while (p < end && !rc) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *line_end = nl ? nl : end;
        lineno++;
        line_cursor c = {p, line_end};
        if (c.end > c.p && c.end[-1] == '\r') c.end--;
        p = nl ? nl + 1 : end;
        if (c.end > c.p && c.end[-1] == ' ') { /* fields are separated by exactly one space */
            rc = line_error(err, errlen, name, lineno, "a space at the end of the line");
            break;
        }
        const char *f;
        size_t fl;
        if (!next_field(&c, &f, &fl)) {
            rc = line_error(err, errlen, name, lineno, "an empty line");
            break;
        }
        if (state == EXPECT_MAGIC) {
            if ((size_t)(c.end - f) != strlen(TOKENIZER_MAGIC) || memcmp(f, TOKENIZER_MAGIC, strlen(TOKENIZER_MAGIC))) {
                rc = line_error(err, errlen, name, lineno, "not a kiln tokenizer (the first line must be \"%s\")",
                                TOKENIZER_MAGIC);
                break;
            }
            state = EXPECT_VOCAB;
            continue;
        }
        if (state == EXPECT_VOCAB) {
            const char *v;
            size_t vl;
            int32_t nv;
            if (!field_is(f, fl, "vocab") || !next_field(&c, &v, &vl) ||
                parse_id(v, vl, (int64_t)TOKENIZER_MAX_VOCAB + 1, &nv) || nv < 256 || c.p < c.end) {
                rc = line_error(err, errlen, name, lineno, "expected \"vocab N\" with 256 <= N <= %d",
                                TOKENIZER_MAX_VOCAB);
                break;
            }
            n_vocab = nv;
            state = EXPECT_PRETOK;
            continue;
        }
        if (state == EXPECT_PRETOK) {
            const char *v;
            size_t vl;
            if (!field_is(f, fl, "pretokenizer") || !next_field(&c, &v, &vl) || c.p < c.end ||
                !(field_is(v, vl, "gpt2") || field_is(v, vl, "none"))) {
                rc = line_error(err, errlen, name, lineno, "expected \"pretokenizer gpt2\" or \"pretokenizer none\"");
                break;
            }
            pretok = field_is(v, vl, "gpt2") ? PRETOK_GPT2 : PRETOK_NONE;
            t = tok_new(n_vocab, pretok);
            if (!t) {
                rc = line_error(err, errlen, name, lineno, "out of memory");
                break;
            }
            state = EXPECT_BYTES;
            continue;
        }
        if (state == EXPECT_BYTES) {
            int32_t ids[256];
            int b = 0;
            const char *v;
            size_t vl;
            if (!field_is(f, fl, "bytes")) {
                rc = line_error(err, errlen, name, lineno, "expected \"bytes\" and the 256 byte ids");
                break;
            }
            while (b < 256 && next_field(&c, &v, &vl) && !parse_id(v, vl, n_vocab, &ids[b])) b++;
            if (b < 256 || c.p < c.end) {
                rc = line_error(err, errlen, name, lineno, "expected \"bytes\" and 256 ids below %ld",
                                (long)n_vocab);
                break;
            }
            if (tok_set_bytes(t, ids, msg, sizeof msg)) rc = line_error(err, errlen, name, lineno, "%s", msg);
            state = EXPECT_BODY;
            continue;
        }
        if (field_is(f, fl, "merge")) {
            const char *v[3];
            size_t vl[3];
            int32_t id[3];
            int k = 0;
            while (k < 3 && next_field(&c, &v[k], &vl[k]) && !parse_id(v[k], vl[k], n_vocab, &id[k])) k++;
            if (k < 3 || c.p < c.end) {
                rc = line_error(err, errlen, name, lineno, "expected \"merge LEFT RIGHT ID\" with ids below %ld",
                                (long)n_vocab);
                break;
            }
            if (tok_add_merge(t, id[0], id[1], id[2], msg, sizeof msg))
                rc = line_error(err, errlen, name, lineno, "%s", msg);
            saw_merge = 1;
        } else if (field_is(f, fl, "special")) {
            const char *v[3];
            size_t vl[3];
            int32_t id;
            int k = 0;
            while (k < 3 && next_field(&c, &v[k], &vl[k])) k++;
            if (k < 3 || c.p < c.end || parse_id(v[0], vl[0], n_vocab, &id)) {
                rc = line_error(err, errlen, name, lineno, "expected \"special ID NAME ROLES\" with an id below %ld",
                                (long)n_vocab);
                break;
            }
            if (saw_merge) {
                rc = line_error(err, errlen, name, lineno, "special tokens come before the merges");
                break;
            }
            unsigned roles = 0;
            if (!field_is(v[2], vl[2], "-")) {
                line_cursor rc_list = {v[2], v[2] + vl[2]};
                while (!rc && rc_list.p < rc_list.end) {
                    const char *comma = memchr(rc_list.p, ',', (size_t)(rc_list.end - rc_list.p));
                    const char *stop = comma ? comma : rc_list.end;
                    int k2 = 0;
                    while (k2 < TOK_SPECIAL_COUNT && !field_is(rc_list.p, (size_t)(stop - rc_list.p), tokenizer_role_names[k2]))
                        k2++;
                    if (k2 == TOK_SPECIAL_COUNT || (roles >> k2 & 1)) {
                        rc = line_error(err, errlen, name, lineno,
                                        "ROLES must be \"-\" or a comma list of pad, bos, eos, cls, sep, mask");
                        break;
                    }
                    roles |= 1u << k2;
                    rc_list.p = comma ? comma + 1 : rc_list.end;
                    if (comma && rc_list.p == rc_list.end) {
                        rc = line_error(err, errlen, name, lineno, "ROLES ends with a comma");
                        break;
                    }
                }
                if (rc) break;
            }
            if (tok_add_special(t, id, v[1], vl[1], roles, msg, sizeof msg))
                rc = line_error(err, errlen, name, lineno, "%s", msg);
        } else {
            rc = line_error(err, errlen, name, lineno, "unknown record \"%.*s\" (expected merge or special)",
                            (int)(fl > 40 ? 40 : fl), f);
        }
    }
    if (!rc && state != EXPECT_BODY) {
        static const char *const wanted[] = {"the line \"" TOKENIZER_MAGIC "\"", "the \"vocab\" line",
                                             "the \"pretokenizer\" line", "the \"bytes\" line"};
        rc = line_error(err, errlen, name, lineno + 1, "the file ends before %s", wanted[state]);
    }
    if (!rc && tok_finish(t, msg, sizeof msg)) rc = line_error(err, errlen, name, lineno, "%s", msg);
    if (rc) {
        tokenizer_free(t);
        return -1;
    }
    *out = t;
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

char *tokenizer_serialize(const tokenizer *t, size_t *n) {
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
