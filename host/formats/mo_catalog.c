/* The GNU .mo reader: validate the header and both string tables against the file's size,
 * then hand out entries. See mo_catalog.h. */
#define _POSIX_C_SOURCE 200809L /* strnlen */

#include "formats/mo_catalog.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/error_printf.h"
#include "formats/file_open.h"

/* The 32-bit word at byte pos (pos + 4 <= size checked by the caller), in the file's order. */
static uint32_t word_at(const unsigned char *d, uint64_t pos, int big_endian) {
    const unsigned char *p = d + pos;
    return big_endian ? (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]
                      : (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0];
}

/* A table of count entries of `width` bytes at offset: inside the file? (64-bit sums of
 * 32-bit values cannot overflow.) */
static int table_fits(uint64_t offset, uint64_t count, uint64_t width, size_t size) {
    return offset <= size && count * width <= size - offset;
}

/* The header's "charset=" value, lowercased, into c->charset; and whether the header still
 * holds the PO template's placeholders (a fuzzy, never filled-in header). */
static void read_header(mo_catalog *c, const char *s, size_t n) {
    c->has_header = 1;
    const char *end = s + n, *p = s;
    while ((p = memchr(p, 'c', (size_t)(end - p))) != NULL && (size_t)(end - p) >= 8 && memcmp(p, "charset=", 8))
        p++;
    if (p && (size_t)(end - p) >= 8) {
        p += 8;
        size_t k = 0;
        while (p < end && k + 1 < sizeof c->charset && *p != ';' && *p != ' ' && *p != '\n' && *p != '\r' &&
               *p != '\t') {
            char ch = *p++;
            c->charset[k++] = ch >= 'A' && ch <= 'Z' ? (char)(ch - 'A' + 'a') : ch;
        }
        c->charset[k] = '\0';
    }
    static const char *placeholders[] = {"charset=CHARSET", "PO-Revision-Date: YEAR-MO-DA"};
    for (size_t i = 0; i < sizeof placeholders / sizeof placeholders[0]; i++) {
        size_t m = strlen(placeholders[i]);
        for (const char *q = s; q + m <= end; q++)
            if (memcmp(q, placeholders[i], m) == 0) c->header_fuzzy = 1;
    }
}

void mo_free(mo_catalog *c) {
    if (!c) return;
    free(c->entries);
    free(c->data);
    free(c);
}

/* Frees what was built and writes "NAME: <message>" into err; returns -1. */
static int refuse(mo_catalog *c, char *err, size_t errlen, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static int refuse(mo_catalog *c, char *err, size_t errlen, const char *name, const char *fmt, ...) {
    mo_free(c);
    if (err && errlen) {
        int k = snprintf(err, errlen, "%s: ", name);
        if (k >= 0 && (size_t)k < errlen) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(err + k, errlen - (size_t)k, fmt, ap);
            va_end(ap);
        }
    }
    return -1;
}

/* The header's words: the byte order, the revision and where the tables lie. */
typedef struct mo_header {
    int big;
    uint32_t revision, strings, orig_tab, trans_tab, hash_size, hash_tab;
    uint32_t sysdep_strings; /* revision x.1 only */
} mo_header;

/* The magic, the revision, and every table the header names inside the file's n bytes. */
static int read_mo_header(const unsigned char *in, size_t n, const char *name, mo_header *h, char *err,
                          size_t errlen) {
    uint32_t magic_le = word_at(in, 0, 0);
    int big = h->big = magic_le != MO_MAGIC;
    if (big && word_at(in, 0, 1) != MO_MAGIC)
        return refuse(NULL, err, errlen, name, "not a GNU .mo file (magic 0x%08" PRIx32 ", expected 0x950412de)",
                      magic_le);
    uint32_t revision = h->revision = word_at(in, 4, big), strings = h->strings = word_at(in, 8, big);
    h->orig_tab = word_at(in, 12, big), h->trans_tab = word_at(in, 16, big);
    h->hash_size = word_at(in, 20, big), h->hash_tab = word_at(in, 24, big);
    if (revision >> 16 > 1 || (revision & 0xffff) > 1)
        return refuse(NULL, err, errlen, name, "revision %" PRIu32 ".%" PRIu32 " is not one this reader knows "
                      "(0.0 to 1.1)", revision >> 16, revision & 0xffff);
    if ((revision & 0xffff) >= 1 && n < 48)
        return refuse(NULL, err, errlen, name, "revision %" PRIu32 ".1 needs a 48-byte header, the file "
                      "has %zu bytes", revision >> 16, n);
    if (!table_fits(h->orig_tab, strings, 8, n))
        return refuse(NULL, err, errlen, name, "the table of %" PRIu32 " original strings at offset %" PRIu32
                      " lies outside the file's %zu bytes", strings, h->orig_tab, n);
    if (!table_fits(h->trans_tab, strings, 8, n))
        return refuse(NULL, err, errlen, name, "the table of %" PRIu32 " translations at offset %" PRIu32
                      " lies outside the file's %zu bytes", strings, h->trans_tab, n);
    if (h->hash_size && !table_fits(h->hash_tab, h->hash_size, 4, n))
        return refuse(NULL, err, errlen, name, "the hash table of %" PRIu32 " words at offset %" PRIu32
                      " lies outside the file's %zu bytes", h->hash_size, h->hash_tab, n);
    h->sysdep_strings = 0;
    if ((revision & 0xffff) >= 1) { /* the system-dependent strings' five header words */
        uint32_t segments = word_at(in, 28, big), segments_tab = word_at(in, 32, big);
        uint32_t sysdep_strings = h->sysdep_strings = word_at(in, 36, big);
        uint32_t orig_sysdep = word_at(in, 40, big), trans_sysdep = word_at(in, 44, big);
        if (!table_fits(segments_tab, segments, 8, n) || !table_fits(orig_sysdep, sysdep_strings, 4, n) ||
            !table_fits(trans_sysdep, sysdep_strings, 4, n))
            return refuse(NULL, err, errlen, name, "the tables of %" PRIu32 " system-dependent strings lie "
                          "outside the file's %zu bytes", sysdep_strings, n);
    }
    return 0;
}

/* Entry i of c: its original string and translation, each inside the file and followed by a
 * NUL; a context before the original's first EOT is split off. */
static int read_entry(mo_catalog *c, const mo_header *h, uint32_t i, const char *name, char *err, size_t errlen) {
    static const char *what[2] = {"original string", "translation"};
    const char *d = (const char *)c->data;
    uint32_t tab[2] = {h->orig_tab, h->trans_tab}, len[2], off[2];
    for (int k = 0; k < 2; k++) {
        len[k] = word_at(c->data, (uint64_t)tab[k] + 8 * (uint64_t)i, h->big);
        off[k] = word_at(c->data, (uint64_t)tab[k] + 8 * (uint64_t)i + 4, h->big);
        /* the string and the NUL after it */
        if (!table_fits(off[k], (uint64_t)len[k] + 1, 1, c->size))
            return refuse(NULL, err, errlen, name, "%s %" PRIu32 " (offset %" PRIu32 ", length %" PRIu32
                          ") lies outside the file's %zu bytes", what[k], i, off[k], len[k], c->size);
        if (d[off[k] + len[k]] != '\0')
            return refuse(NULL, err, errlen, name, "%s %" PRIu32 " (offset %" PRIu32 ", length %" PRIu32
                          ") is not followed by a NUL", what[k], i, off[k], len[k]);
    }
    mo_entry *e = &c->entries[i];
    e->id = d + off[0];
    e->id_len = len[0];
    e->str = d + off[1];
    e->str_len = len[1];
    /* "msgctxt\004msgid": the context ends at the first EOT (before any plural NUL) */
    size_t singular = strnlen(e->id, e->id_len);
    const char *eot = memchr(e->id, '\004', singular);
    if (eot) {
        e->ctxt = e->id;
        e->ctxt_len = (size_t)(eot - e->id);
        e->id_len -= e->ctxt_len + 1;
        e->id = eot + 1;
        singular -= e->ctxt_len + 1;
    }
    e->plural = singular < e->id_len;
    e->header = !e->ctxt && e->id_len == 0;
    if (e->header && !c->has_header) read_header(c, e->str, e->str_len);
    return 0;
}

int mo_parse(const void *buf, size_t n, const char *name, mo_catalog **out, char *err, size_t errlen) {
    if (!out) return -1;
    *out = NULL;
    if (!name) name = "<mo>";
    if (!buf && n) return refuse(NULL, err, errlen, name, "NULL buffer");
    if (n < 28)
        return refuse(NULL, err, errlen, name, "%zu bytes are too few for a GNU .mo header (28)", n);
    mo_header h = {0};
    if (read_mo_header(buf, n, name, &h, err, errlen) != 0) return -1;
    mo_catalog *c = calloc(1, sizeof *c);
    if (!c) return refuse(NULL, err, errlen, name, "out of memory");
    c->big_endian = h.big;
    c->revision = h.revision;
    c->sysdep_count = h.sysdep_strings;
    c->size = n;
    c->data = malloc(n);
    c->entries = calloc(h.strings ? h.strings : 1, sizeof *c->entries);
    if (!c->data || !c->entries) return refuse(c, err, errlen, name, "out of memory for %zu bytes", n);
    memcpy(c->data, buf, n);
    for (uint32_t i = 0; i < h.strings; i++) {
        if (read_entry(c, &h, i, name, err, errlen) != 0) {
            mo_free(c);
            return -1;
        }
    }
    c->count = h.strings;
    *out = c;
    return 0;
}

int mo_load(const char *path, mo_catalog **out, char *err, size_t errlen) {
    if (!out) return -1;
    *out = NULL;
    if (!path) {
        error_printf(err, errlen, "mo_load: NULL path");
        return -1;
    }
    char *bytes;
    size_t n;
    if (file_read_all(path, "the catalog (a GNU .mo file)", &bytes, &n, err, errlen) != 0) return -1;
    int rc = mo_parse(bytes, n, path, out, err, errlen);
    free(bytes);
    return rc;
}
